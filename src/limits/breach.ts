import { sentAtSeen, windowEnd } from '../rules/clock-steps.js';
import type { Logger } from 'pino';
import { errorName } from '../errors/summary.js';
import { settlesWithin } from '../runtime/settles-within.js';
import type { OnUnauthorized, UnauthorizedAttempt, UnauthorizedReason } from '../anomalies/record.js';
import type { EventPublisher } from '../events/publisher.js';
import { BreachSummary, breachSummaryData } from './breach-summary.js';
import { mergeSummaryParts, type SummaryPart } from './summary-part.js';
import type { Counters, MaybePromise, WindowCount } from './counters.js';
import { ipNetworkKey } from './ip-network.js';

/** DESIGN §10: at most one alert per (token, origin, ip) per minute from the last alert sent. */
export const BREACH_COALESCE_MS = 60_000;
/** Alerts per token and per account within one interval; the rest go into the token's summary. */
export const ALERTS_PER_TOKEN = 3;
export const ALERTS_PER_ACCOUNT = 10;
const FLUSH_EVERY_MS = 5_000;
const MAX_TRACKED = 10_000;
/** Open summaries: one per token under attack, so bounded by the tokens that exist in practice. */
const MAX_SUMMARIES = 10_000;

export interface BreachHandlerOptions {
  readonly counters: Counters;
  /** The anomaly log: every attempt is written there, whatever the coalescing. */
  readonly anomalies: { readonly onUnauthorized: OnUnauthorized };
  readonly publisher: EventPublisher;
  readonly logger?: Logger | undefined;
  readonly now?: (() => number) | undefined;
  readonly intervalMs?: number | undefined;
  /** Tuples tracked for trailing alerts at most (memory bound). */
  readonly maxTracked?: number | undefined;
  /** How often trailing alerts are checked; 0 = never on a timer (tests call `flush`). */
  readonly flushEveryMs?: number | undefined;
  /**
   * How long after a summary's window ends a process takes the merged summary and sends it: 0 alone
   * (its own part is the whole), more than a flush period in a cluster, so that every member has
   * pooled its part by then (summaryGraceMs).
   */
  readonly summaryGraceMs?: number | undefined;
}

/** How long a pooled summary part waits to be taken before the counters forget it. */
const SUMMARY_POOL_LIFE_MS = 10 * BREACH_COALESCE_MS;

/**
 * The grace for a cluster, from the end of the window: each member pools at its first flush after it
 * (within one flush period, plus the time its trailing alerts take), and the take waits a second
 * flush period and a second more.
 */
export function summaryGraceMs(shared: boolean, flushEveryMs: number = FLUSH_EVERY_MS): number {
  return shared ? 2 * flushEveryMs + 1_000 : 0;
}

export interface BreachHandler {
  /** Wire as the proxy's `onUnauthorized`. Returns at once and never throws. */
  readonly onUnauthorized: OnUnauthorized;
  /** Sends the trailing alerts that are due: attempts left over since a key's last alert. */
  flush(now?: number): Promise<void>;
  /**
   * At shutdown, after the proxy has stopped taking requests: announces what this process still
   * owes instead of losing it with the process (see `drain` below), then stops the timer.
   */
  close(): Promise<void>;
}

/**
 * A token's summary part pooled by this process: whose it is, when to take the pool, and what it
 * added, kept until the take: the one copy a take that fails sends instead of the pool.
 */
interface Pooled {
  readonly accountId: string;
  takeAt: number;
  readonly own: SummaryPart;
}

/** A tuple alerted lately: when, and why its attempts were refused (for the trailing alert's reason). */
interface Quiet {
  readonly at: number;
  readonly reason: UnauthorizedReason;
}

interface Pending {
  /** Latest attempt not covered by an alert yet. */
  attempt: UnauthorizedAttempt;
  /** When this process last saw an alert sent for the key (or first saw the key suppressed). */
  sentAt: number;
  /** Attempts this process coalesced under the key since: what it owes if it stops first. */
  owed: number;
}

/** At shutdown, the alerts owed are given this long to reach the outbox (a stalled store). */
const DRAIN_DEADLINE_MS = 5_000;

/**
 * Breach actions for unauthorized proxy requests (specification §6, DESIGN §6/§10): the anomaly-log
 * entry (always) and a `breach.detected` event, from which the events module derives the webhook and
 * the e-mail, so coalescing the event coalesces both.
 *
 * Coalescing is leading-edge with a trailing summary: the first attempt for a (token, origin, ip)
 * alerts at once; attempts in the next 60 s are counted, and the next alert (a new attempt after the
 * 60 s, or the trailing one sent when the 60 s are over) carries their number in `attempts`. Attempts
 * refused with `ip_backoff` are counted into that number but never trigger an alert by themselves.
 * The IP of the tuple is its network (ipNetworkKey): an IPv6 client's /64.
 *
 * Above the tuples, caps bound the inbox however many origins and addresses an attacker rotates
 * through: at most ALERTS_PER_TOKEN alerts per token and ALERTS_PER_ACCOUNT per account per
 * interval (counted in `counters`, so shared like every limit). An alert over a cap is merged into
 * the token's summary, one `breach.detected` with `summary: true` sent when the capping window ends.
 * The tuple table is bounded too; when it is full, attempts of new tuples go into the summary
 * rather than evicting a tuple whose trailing alert is still pending.
 */
export function createBreachHandler(options: BreachHandlerOptions): BreachHandler {
  const { counters, anomalies, publisher, logger } = options;
  const now = options.now ?? Date.now;
  const interval = options.intervalMs ?? BREACH_COALESCE_MS;
  const maxTracked = options.maxTracked ?? MAX_TRACKED;
  // Tuples with a trailing alert to send, and tuples alerted lately with nothing pending. The quiet
  // ones only remember when their alert went out (the counters know it too) and why, so they are the
  // ones dropped first when the table is full.
  const pending = new Map<string, Pending>();
  const quiet = new Map<string, Quiet>();
  const summaries = new Map<string, BreachSummary>();
  /** Tokens whose summary part this process pooled, until it takes the merged one. */
  const pooled = new Map<string, Pooled>();
  const grace = options.summaryGraceMs ?? 0;
  let warnedFull = false;

  function fail(what: string): (err: unknown) => void {
    return (err: unknown) => logger?.error({ err: errorName(err) }, what);
  }

  /** Publishes not yet settled: shutdown waits for them, so the store is still open for each. */
  const publishing = new Set<Promise<void>>();
  /** Shared-counter answers still on their way (with Redis): shutdown waits for them too. */
  const settling = new Set<Promise<void>>();
  let flushing: Promise<void> | undefined;

  function track(set: Set<Promise<void>>, work: Promise<void>): void {
    set.add(work);
    void work.finally(() => set.delete(work));
  }

  function emit(accountId: string, data: Record<string, unknown>): void {
    const done = publisher
      .publish({ accountId, type: 'breach.detected', data })
      .then(() => undefined, fail('breach.detected not recorded'));
    track(publishing, done);
  }

  function publish(attempt: UnauthorizedAttempt, attempts: number): void {
    emit(attempt.accountId, {
      token_id: attempt.tokenId,
      origin: attempt.origin,
      ip: attempt.ip,
      country: attempt.country,
      path: attempt.path,
      reason: attempt.reason,
      attempts,
      // The latest attempt it covers (the alert itself may come up to a minute later).
      last_seen: attempt.timestamp,
    });
  }

  /** Merges attempts the caps or the table bound held back into the token's summary. */
  function summarise(attempt: UnauthorizedAttempt, attempts: number, dueAt: number): void {
    let summary = summaries.get(attempt.tokenId);
    if (summary === undefined) {
      if (summaries.size >= MAX_SUMMARIES) {
        // Once per flush period, not once per attempt: the flood must not become a log flood.
        if (!warnedFull)
          logger?.warn(
            'breach summaries full: attempts left out of the alerts (every one is in the anomaly log)',
          );
        warnedFull = true;
        return;
      }
      summary = new BreachSummary(attempt.accountId, attempt.tokenId, dueAt);
      summaries.set(attempt.tokenId, summary);
    } else if (dueAt > summary.dueAt) summary.dueAt = dueAt;
    summary.add(attempt, attempts);
  }

  /** Counts one alert under `key`; the window is read at once (the in-memory one is live). */
  function count(key: string, at: number): MaybePromise<WindowCount> {
    const w = counters.hit(key, interval, at);
    return w instanceof Promise ? w : { count: w.count, resetAt: w.resetAt };
  }

  /** An alert the tuple rule allows: sent if the token's and the account's caps allow it too. */
  async function alert(attempt: UnauthorizedAttempt, attempts: number, at: number): Promise<void> {
    const token = await count(`breach-alerts:token:${attempt.tokenId}`, at);
    if (token.count > ALERTS_PER_TOKEN) return summarise(attempt, attempts, token.resetAt);
    const account = await count(`breach-alerts:account:${attempt.accountId}`, at);
    if (account.count > ALERTS_PER_ACCOUNT)
      return summarise(attempt, attempts, Math.max(token.resetAt, account.resetAt));
    publish(attempt, attempts);
  }

  function settle(key: string, attempt: UnauthorizedAttempt, at: number, covered: number): void {
    if (covered > 0) {
      alert(attempt, covered, at).catch(fail('breach alert failed'));
      pending.delete(key);
      quiet.delete(key);
      quiet.set(key, { at, reason: attempt.reason });
      return;
    }
    const t = pending.get(key);
    if (t !== undefined) {
      t.attempt = withReasonOf(attempt, t.attempt.reason);
      t.owed++;
      return;
    }
    const alerted = quiet.get(key);
    quiet.delete(key);
    pending.set(key, { attempt: withReasonOf(attempt, alerted?.reason), sentAt: alerted?.at ?? at, owed: 1 });
  }

  /** Makes room for a new tuple: false when every tracked tuple still has a trailing alert to send. */
  function room(key: string): boolean {
    if (pending.size + quiet.size < maxTracked || pending.has(key) || quiet.has(key)) return true;
    const oldest = quiet.keys().next();
    if (oldest.done === true) return false;
    quiet.delete(oldest.value);
    return true;
  }

  const onUnauthorized: OnUnauthorized = (attempt) => {
    try {
      anomalies.onUnauthorized(attempt);
      const at = now();
      const key = `${attempt.tokenId}\n${attempt.origin ?? ''}\n${ipNetworkKey(attempt.ip)}`;
      if (!room(key)) {
        // Evicting a tuple would lose its pending trailing alert; the summary keeps the count.
        summarise(attempt, 1, at + interval);
        return;
      }
      const covered = counters.coalesce(key, at, interval, raisesAlert(attempt));
      if (covered instanceof Promise) {
        const settled = covered.then((n) => settle(key, attempt, at, n), fail('breach coalescing failed'));
        track(settling, settled);
      } else {
        settle(key, attempt, at, covered);
      }
    } catch (err) {
      logger?.error({ err: errorName(err) }, 'breach handler failed');
    }
  };

  async function flush(at: number = now()): Promise<void> {
    for (const [key, q] of quiet) if (at - q.at >= interval) quiet.delete(key);
    for (const [key, t] of pending) {
      let covered: number;
      if (t.sentAt > at) {
        // A clock stepped back: an alert "sent" after now restarts its interval now, not in an hour
        // (rules/clock-steps.ts); the counters keep a send time of their own and see it too (0).
        // Another member's older send time may let them hand the trailing alert over now: sent.
        t.sentAt = sentAtSeen(t.sentAt, at);
        covered = await counters.flushCoalesced(key, at, interval);
        if (covered === 0) continue;
      } else {
        if (at - t.sentAt < interval) continue;
        // Zero: another process's alert covered them, or the key's window is not over there yet.
        covered = await counters.flushCoalesced(key, at, interval);
      }
      pending.delete(key);
      quiet.set(key, { at, reason: t.attempt.reason });
      if (covered > 0) await alert(t.attempt, covered, at);
    }
    warnedFull = false;
    // After the tuples: a trailing alert held back by the caps joins a summary that is due now.
    await sendSummaries(at);
  }

  /**
   * Pools every summary due by `at` (all of them at shutdown), then sends the merged summary of each
   * token whose grace is over (all at shutdown): in a cluster, the member that takes a token's pool
   * first sends the attempts every member held back, and the others find it empty. Tokens go
   * concurrently: a flood over many tokens must not hold a shutdown for one round trip each.
   */
  async function sendSummaries(at: number, all = false): Promise<void> {
    // A clock stepped back: a summary is due at most one window from now, and taken a grace after.
    for (const summary of summaries.values()) summary.dueAt = windowEnd(summary.dueAt, interval, at);
    for (const p of pooled.values()) p.takeAt = windowEnd(p.takeAt, interval + grace, at);
    const due = [...summaries.values()].filter((summary) => all || at >= summary.dueAt);
    for (const summary of due) summaries.delete(summary.tokenId);
    await Promise.all(due.map((summary) => pool(summary, at)));
    const ready = [...pooled].filter(([, p]) => all || at >= p.takeAt);
    for (const [tokenId] of ready) pooled.delete(tokenId);
    await Promise.all(ready.map(([tokenId, p]) => take(tokenId, p, at)));
  }

  async function pool(summary: BreachSummary, at: number): Promise<void> {
    const part = summary.part();
    try {
      await counters.poolSummary(poolKey(summary.tokenId), part, at + SUMMARY_POOL_LIFE_MS, at);
    } catch (err) {
      // Not pooled: sent alone rather than lost (a cluster may then get two summaries).
      fail('breach summary not pooled')(err);
      emit(summary.accountId, { ...breachSummaryData(summary.tokenId, part) });
      return;
    }
    const held = pooled.get(summary.tokenId);
    // Counted from the window's end, which every member shares, not from this member's flush.
    const takeAt = held?.takeAt ?? summary.dueAt + grace;
    pooled.set(summary.tokenId, {
      accountId: summary.accountId,
      takeAt,
      own: mergeSummaryParts(held?.own, part),
    });
  }

  async function take(tokenId: string, p: Pooled, at: number): Promise<void> {
    let merged: SummaryPart | undefined;
    try {
      merged = await counters.takeSummary(poolKey(tokenId), at);
    } catch (err) {
      // The pool is out of reach: this member's own part goes out alone rather than being lost.
      fail('breach summary pool not taken')(err);
      merged = p.own;
    }
    if (merged !== undefined) emit(p.accountId, { ...breachSummaryData(tokenId, merged) });
  }

  const every = options.flushEveryMs ?? FLUSH_EVERY_MS;
  const timer =
    every > 0
      ? setInterval(() => {
          if (flushing !== undefined) return;
          flushing = flush()
            .catch((err: unknown) => logger?.error({ err: errorName(err) }, 'breach flush failed'))
            .finally(() => (flushing = undefined));
        }, every)
      : undefined;
  timer?.unref();

  /**
   * What this process still owes goes out now: each pending trailing alert joins its token's
   * summary (the attempts this process coalesced under it, counted locally: the shared counters are
   * not touched, so other members' windows stay as they are; a member that alerts for the same
   * attempts later may count some twice, which beats none), then every summary is sent with what it
   * holds. A restart during an attack must not swallow the alerts of its last minute; the attempts
   * themselves are in the anomaly log either way.
   */
  async function drain(): Promise<void> {
    // Work already under way: answers of the shared counters, a timer flush, their alerts.
    while (settling.size > 0 || flushing !== undefined) {
      await Promise.allSettled([...settling, flushing]);
    }
    const at = now();
    for (const [key, t] of pending) {
      pending.delete(key);
      summarise(t.attempt, t.owed, at);
    }
    await sendSummaries(at, true).catch(fail('breach summaries not sent at shutdown'));
    while (publishing.size > 0) await Promise.allSettled([...publishing]);
  }

  return {
    onUnauthorized,
    flush,
    async close() {
      if (timer !== undefined) clearInterval(timer);
      if (!(await settlesWithin(drain(), DRAIN_DEADLINE_MS))) {
        logger?.error({ ms: DRAIN_DEADLINE_MS }, 'breach alerts owed at shutdown not all recorded in time');
      }
    },
  };
}

function poolKey(tokenId: string): string {
  return `breach-summary:${tokenId}`;
}

/** DESIGN §10: `ip_backoff` refusals are counted but alert by themselves never; see `alert`. */
export function raisesAlert(attempt: UnauthorizedAttempt): boolean {
  return attempt.alert ?? attempt.reason !== 'ip_backoff';
}

/**
 * The attempt a trailing alert tells of: the latest (its time, its path), with the reason the
 * tuple's attempts were refused. After the first refusal the IP backs off, so most later attempts
 * read `ip_backoff`, which says nothing of why.
 */
function withReasonOf(
  attempt: UnauthorizedAttempt,
  earlier: UnauthorizedReason | undefined,
): UnauthorizedAttempt {
  return attempt.reason !== 'ip_backoff' || earlier === undefined || earlier === attempt.reason
    ? attempt
    : { ...attempt, reason: earlier };
}
