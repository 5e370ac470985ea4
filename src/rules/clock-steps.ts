/**
 * Instants the limits keep were read from a wall clock, `Date.now()`. A wall clock can step back (an
 * NTP correction, an operator's `date -s`, a VM restored from a snapshot), so a stored instant may
 * lie in the future of the clock that wrote it. Each rule here trusts such an instant only as far as
 * the duration that produced it: a window never ends more than its length after now, a wait never
 * lasts longer than it was set for, and an alert is never "sent" after now. Without them a clock
 * stepped back by an hour held a used-up rate-limit window, an IP's backoff and every breach alert
 * of a tuple for that hour more.
 *
 * In a cluster (RedisCounters) each member passes its own clock, and members disagree a little. An
 * instant another member wrote may lie in this member's future by that skew, and cutting it short
 * would make the member ahead see its windows ended and open new ones (measured: two members two
 * minutes apart then let a 10-a-minute limit pass every request). So a member applies `windowEnd`
 * and `sentAtSeen` only to instants its own clock wrote; `remainingWait` changes nothing stored and
 * applies to all. Pure; the Lua scripts of redis-scripts.ts apply the same rules.
 */

/** When a window opened with length `windowMs` ends, seen at `now` by the clock that opened it. */
export function windowEnd(resetAt: number, windowMs: number, now: number): number {
  return Math.min(resetAt, now + windowMs);
}

/** When an alert was last sent, seen at `now` by the clock that sent it: never later than now. */
export function sentAtSeen(sentAt: number, now: number): number {
  return Math.min(sentAt, now);
}

/**
 * The wait still left of a backoff set at `last` to last until `until`, seen at `now`: never more
 * than the wait it was set for (`until - last`), and 0 once over.
 */
export function remainingWait(last: number, until: number, now: number): number {
  return Math.max(0, Math.min(until - now, until - last));
}
