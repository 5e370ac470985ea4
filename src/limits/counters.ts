/**
 * The shared state behind every limit: token rate limits, IP backoff, plan quotas and alert
 * coalescing. One interface, so that a Redis implementation (several processes, DESIGN §9) can
 * replace the in-memory one without touching the callers.
 *
 * Every operation is a single read-modify-write that an implementation must perform atomically (in
 * memory it is one synchronous call; in Redis it would be one Lua script). Callers never check and
 * then increment in two steps, so limits stay exact under concurrency.
 *
 * Results are `MaybePromise`: the in-memory implementation answers synchronously and the proxy
 * checks `instanceof Promise`, so the common path never pays for an await; a networked
 * implementation returns promises and the same callers still work.
 */

import { remainingWait, sentAtSeen, windowEnd } from '../rules/clock-steps.js';
import { mergeSummaryParts, type SummaryPart } from './summary-part.js';

export type MaybePromise<T> = T | Promise<T>;

export interface WindowCount {
  /** The counter after this hit. */
  readonly count: number;
  /** When the window ends (ms since the epoch); the next hit after it starts a new window at 1. */
  readonly resetAt: number;
}

export interface BackoffPolicy {
  /** Wait after the first attempt; doubled by every further attempt. */
  readonly baseMs: number;
  readonly maxMs: number;
  /** A key with no attempt for this long starts over at `baseMs`. */
  readonly resetAfterMs: number;
}

export interface Strike {
  /** The key was still waiting when this attempt came (the attempt is refused as backoff). */
  readonly blocked: boolean;
  /** How long the key must now wait, counted from this attempt. */
  readonly waitMs: number;
}

export interface Reservation {
  readonly ok: boolean;
  readonly total: number;
}

export interface Counters {
  /**
   * Fixed-window count: adds 1 to `key` and returns the new count. The first hit (or the first after
   * the window ended) opens a window of `windowMs` starting now.
   */
  hit(key: string, windowMs: number, now: number): MaybePromise<WindowCount>;
  /** Sets `key` to `value` unless it already holds a live value; returns the value it holds after. */
  seed(key: string, value: number, expiresAt: number, now: number): MaybePromise<number>;
  /** Adds `by` to `key` (absent or expired counts as 0) and returns the sum; it lives until `expiresAt`. */
  add(key: string, by: number, expiresAt: number, now: number): MaybePromise<number>;
  /**
   * Adds `amount` to `key` only when the sum stays within `limit` (absent or expired counts as 0);
   * the key lives until `expiresAt`. Returns whether it was added and the sum after the call.
   */
  reserve(
    key: string,
    amount: number,
    limit: number,
    expiresAt: number,
    now: number,
  ): MaybePromise<Reservation>;
  /**
   * Records one refused attempt for `key` under exponential backoff: the wait doubles with each
   * attempt (capped) and restarts from this attempt. Says whether the key was still waiting.
   */
  strike(key: string, now: number, policy: BackoffPolicy): MaybePromise<Strike>;
  /** Remaining wait of `key` in ms (0 = none), without recording anything. */
  waiting(key: string, now: number, policy: BackoffPolicy): MaybePromise<number>;
  /**
   * Counts one occurrence for an alert coalesced per `key`. When `trigger` is set and no alert was
   * sent for `key` in the last `intervalMs`, marks an alert as sent now and returns how many
   * occurrences it covers (those accumulated since the previous alert, this one included); else 0.
   */
  coalesce(key: string, now: number, intervalMs: number, trigger: boolean): MaybePromise<number>;
  /**
   * The trailing alert: when occurrences are pending for `key`, an alert was sent for it before, and
   * `intervalMs` has passed since, marks an alert as sent now and returns their number; else 0.
   * (Occurrences that may not trigger, such as `ip_backoff` refusals, never alert on their own.)
   */
  flushCoalesced(key: string, now: number, intervalMs: number): MaybePromise<number>;
  /**
   * Merges `part` into the summary pooled under `key` (mergeSummaryParts), which lives until
   * `expiresAt` unless taken: every process of a cluster pools its part of a token's summary.
   */
  poolSummary(key: string, part: SummaryPart, expiresAt: number, now: number): MaybePromise<void>;
  /**
   * Removes and returns what is pooled under `key`, or undefined when nothing is (taken already, or
   * expired): of the processes that take a key at once, one gets the summary, so one sends it.
   */
  takeSummary(key: string, now: number): MaybePromise<SummaryPart | undefined>;
  /** Stops background work (the sweep timer). */
  close(): void;
}

export interface MemoryCountersOptions {
  /** Entries per kind of state; beyond it the oldest entry is dropped (memory stays bounded). */
  readonly maxEntries?: number;
  /** How often expired entries are removed. */
  readonly sweepIntervalMs?: number;
}

interface Window {
  count: number;
  resetAt: number;
  /** The length this window was opened with (an edited length applies from the next window). */
  windowMs: number;
}

interface Value {
  value: number;
  expiresAt: number;
}

interface Backoff {
  attempts: number;
  last: number;
  until: number;
}

interface Coalesced {
  pending: number;
  /** When the last alert was sent; -Infinity before the first. */
  sentAt: number;
  last: number;
  intervalMs: number;
}

const DEFAULT_MAX_ENTRIES = 200_000;
const DEFAULT_SWEEP_MS = 10_000;

/** Counters of one process. Every call is synchronous, hence atomic on Node's single thread. */
export class MemoryCounters implements Counters {
  readonly #max: number;
  readonly #windows = new Map<string, Window>();
  readonly #values = new Map<string, Value>();
  readonly #backoffs = new Map<string, Backoff>();
  readonly #coalesced = new Map<string, Coalesced>();
  readonly #summaries = new Map<string, { part: SummaryPart; expiresAt: number }>();
  readonly #timer: NodeJS.Timeout;
  #lastNow = 0;
  #policyReset = 0;

  constructor(options: MemoryCountersOptions = {}) {
    this.#max = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    // The sweep uses the clock of the latest call, so an injected test clock sweeps consistently.
    this.#timer = setInterval(() => this.sweep(this.#lastNow), options.sweepIntervalMs ?? DEFAULT_SWEEP_MS);
    this.#timer.unref();
  }

  /** The result is the live window: read it at once, it changes with the next hit. */
  hit(key: string, windowMs: number, now: number): WindowCount {
    this.#lastNow = now;
    let w = this.#windows.get(key);
    if (w === undefined || now >= w.resetAt) {
      if (w === undefined) this.#room(this.#windows);
      w = { count: 0, resetAt: now + windowMs, windowMs };
      this.#windows.set(key, w);
    } else {
      // A clock stepped back: the window ends at most its length from now (clock-steps.ts).
      w.resetAt = windowEnd(w.resetAt, w.windowMs, now);
    }
    w.count++;
    return w;
  }

  seed(key: string, value: number, expiresAt: number, now: number): number {
    this.#lastNow = now;
    const v = this.#values.get(key);
    if (v !== undefined && now < v.expiresAt) return v.value;
    if (v === undefined) this.#room(this.#values);
    this.#values.set(key, { value, expiresAt });
    return value;
  }

  add(key: string, by: number, expiresAt: number, now: number): number {
    this.#lastNow = now;
    const v = this.#values.get(key);
    if (v !== undefined && now < v.expiresAt) {
      v.value += by;
      return v.value;
    }
    if (v === undefined) this.#room(this.#values);
    this.#values.set(key, { value: by, expiresAt });
    return by;
  }

  reserve(key: string, amount: number, limit: number, expiresAt: number, now: number): Reservation {
    this.#lastNow = now;
    const v = this.#values.get(key);
    const live = v !== undefined && now < v.expiresAt;
    const current = live ? v.value : 0;
    const total = current + amount;
    if (total > limit) return { ok: false, total: current };
    if (live) v.value = total;
    else {
      if (v === undefined) this.#room(this.#values);
      this.#values.set(key, { value: total, expiresAt });
    }
    return { ok: true, total };
  }

  strike(key: string, now: number, policy: BackoffPolicy): Strike {
    this.#lastNow = now;
    this.#policyReset = Math.max(this.#policyReset, policy.resetAfterMs);
    let b = this.#backoffs.get(key);
    if (b === undefined || now - b.last >= policy.resetAfterMs) {
      if (b === undefined) this.#room(this.#backoffs);
      b = { attempts: 0, last: now, until: now };
      this.#backoffs.set(key, b);
    }
    const blocked = now < b.until;
    b.attempts++;
    b.last = now;
    const waitMs = backoffWaitMs(b.attempts, policy);
    b.until = now + waitMs;
    return { blocked, waitMs };
  }

  waiting(key: string, now: number, policy: BackoffPolicy): number {
    const b = this.#backoffs.get(key);
    if (b === undefined || now - b.last >= policy.resetAfterMs) return 0;
    return remainingWait(b.last, b.until, now);
  }

  coalesce(key: string, now: number, intervalMs: number, trigger: boolean): number {
    this.#lastNow = now;
    let c = this.#coalesced.get(key);
    if (c === undefined) {
      this.#room(this.#coalesced);
      c = { pending: 0, sentAt: -Infinity, last: now, intervalMs };
      this.#coalesced.set(key, c);
    }
    c.pending++;
    c.last = now;
    c.intervalMs = intervalMs;
    c.sentAt = sentAtSeen(c.sentAt, now);
    if (!trigger || now - c.sentAt < intervalMs) return 0;
    const covered = c.pending;
    c.pending = 0;
    c.sentAt = now;
    return covered;
  }

  flushCoalesced(key: string, now: number, intervalMs: number): number {
    this.#lastNow = now;
    const c = this.#coalesced.get(key);
    if (c === undefined || c.pending === 0 || c.sentAt === -Infinity) return 0;
    c.sentAt = sentAtSeen(c.sentAt, now);
    if (now - c.sentAt < intervalMs) return 0;
    const covered = c.pending;
    c.pending = 0;
    c.sentAt = now;
    return covered;
  }

  poolSummary(key: string, part: SummaryPart, expiresAt: number, now: number): void {
    this.#lastNow = now;
    const held = this.#summaries.get(key);
    const live = held !== undefined && now < held.expiresAt ? held.part : undefined;
    if (held === undefined) this.#room(this.#summaries);
    this.#summaries.set(key, { part: mergeSummaryParts(live, part), expiresAt });
  }

  takeSummary(key: string, now: number): SummaryPart | undefined {
    this.#lastNow = now;
    const held = this.#summaries.get(key);
    this.#summaries.delete(key);
    return held !== undefined && now < held.expiresAt ? held.part : undefined;
  }

  /** Drops every entry that no longer changes an answer. Runs on a timer; public for tests. */
  sweep(now: number): void {
    for (const [key, w] of this.#windows) if (now >= w.resetAt) this.#windows.delete(key);
    for (const [key, v] of this.#values) if (now >= v.expiresAt) this.#values.delete(key);
    for (const [key, p] of this.#summaries) if (now >= p.expiresAt) this.#summaries.delete(key);
    const reset = this.#policyReset;
    for (const [key, b] of this.#backoffs) if (now - b.last >= reset) this.#backoffs.delete(key);
    for (const [key, c] of this.#coalesced) {
      // Nothing pending and the interval over: the next occurrence would alert anyway.
      if (c.pending === 0 && now - c.sentAt >= c.intervalMs) this.#coalesced.delete(key);
      // Pending but nobody flushed it for long (another process's key, a lost flush): forget it.
      else if (now - c.last >= 10 * c.intervalMs) this.#coalesced.delete(key);
    }
  }

  /** Forgets every count (FallbackCounters: what an earlier Redis outage counted is stale now). */
  clear(): void {
    this.#windows.clear();
    this.#values.clear();
    this.#backoffs.clear();
    this.#coalesced.clear();
    // Summary parts stay: they are alerts waiting to be sent, not counts an outage made stale.
  }

  /** Entries held, per kind (tests and metrics). */
  get sizes(): { windows: number; values: number; backoffs: number; coalesced: number; summaries: number } {
    return {
      windows: this.#windows.size,
      values: this.#values.size,
      backoffs: this.#backoffs.size,
      coalesced: this.#coalesced.size,
      summaries: this.#summaries.size,
    };
  }

  close(): void {
    clearInterval(this.#timer);
  }

  /** Keeps a map under its cap by dropping its oldest entry (Maps iterate in insertion order). */
  #room(map: Map<string, unknown>): void {
    if (map.size < this.#max) return;
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
}

/** Wait after the `attempts`-th attempt in a row: base, 2×base, 4×base, …, capped at max. */
export function backoffWaitMs(attempts: number, policy: BackoffPolicy): number {
  if (attempts <= 0) return 0;
  // 2^31 overflows nothing in floating point, but capping the exponent keeps it obviously finite.
  const factor = 2 ** Math.min(attempts - 1, 52);
  return Math.min(policy.baseMs * factor, policy.maxMs);
}
