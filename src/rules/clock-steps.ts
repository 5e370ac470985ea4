/**
 * Instants the limits keep were read from a wall clock, `Date.now()`. A wall clock can step back (an
 * NTP correction, an operator's `date -s`, a VM restored from a snapshot), so a stored instant may
 * lie in the future of the clock that wrote it. Each rule here trusts such an instant only as far as
 * the duration that produced it: a window never ends more than its length after now, a wait is
 * over once the clock is behind it by the wait or more, and an alert is never "sent" after now. Without them a clock
 * stepped back by an hour held a used-up rate-limit window, an IP's backoff and every breach alert
 * of a tuple for that hour more.
 *
 * In a cluster (RedisCounters) each member passes the database's clock as it reads it
 * (src/cluster/shared-clock.ts), so members disagree by little more than a round trip; before that
 * they passed their own clocks, and disagreed by whatever the machines did. An
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
 * The wait still left of a backoff set at `last` to last until `until`, seen at `now`. Once `now`
 * has reached `last`, what is left of it. A `now` before `last` means a clock stepped back or a
 * member behind the one that set it: by less than the wait, the whole wait is still owed (so a
 * little skew never lets an attempt through early, and it lasts at most twice as long); by the wait
 * or more, it is over, since the reading cannot run down until the clock catches up with `last`
 * (an hour's step would otherwise hold a one-second wait for the hour).
 */
export function remainingWait(last: number, until: number, now: number): number {
  const wait = until - last;
  if (now >= last) return Math.max(0, until - now);
  return last - now < wait ? wait : 0;
}
