import type {
  BackoffPolicy,
  Counters,
  MaybePromise,
  MemoryCounters,
  Reservation,
  Strike,
  WindowCount,
} from './counters.js';
import { mergeSummaryParts, type SummaryPart } from './summary-part.js';

/** What FallbackCounters needs to know of the Redis connection. */
export interface SharedHealth {
  readonly up: boolean;
  /** How long a shared call may take before it counts as failed (a Redis that hangs). */
  readonly commandTimeoutMs: number;
  /** A command failed while the connection looked up: treat Redis as away until it answers again. */
  suspect(err: unknown): void;
}

/**
 * Shared counters while Redis is up, this process's own while it is away (DESIGN §9): a limit is
 * never a reason to fail a request. A call that fails in Redis, or does not answer within the
 * command timeout, is answered by the memory counters, and the connection is marked down, so the
 * next calls skip Redis without waiting until it answers again. The connection
 * logs each transition once; nothing here logs per request.
 *
 * Counts made in memory during an outage stay in memory: when Redis returns, the shared counts go
 * on from what Redis holds (docs/decisions.md says what that means for each limit).
 */
export class FallbackCounters implements Counters {
  readonly #shared: Counters;
  readonly #local: MemoryCounters;
  readonly #health: SharedHealth;

  constructor(shared: Counters, local: MemoryCounters, health: SharedHealth) {
    this.#shared = shared;
    this.#local = local;
    this.#health = health;
  }

  /** True while counts go to Redis (tests, metrics). */
  get sharing(): boolean {
    return this.#health.up;
  }

  hit(key: string, windowMs: number, now: number): MaybePromise<WindowCount> {
    if (!this.#health.up) return this.#memoryHit(key, windowMs, now);
    return this.#either(this.#shared.hit(key, windowMs, now), () => this.#memoryHit(key, windowMs, now));
  }

  seed(key: string, value: number, expiresAt: number, now: number): MaybePromise<number> {
    if (!this.#health.up) return this.#local.seed(key, value, expiresAt, now);
    return this.#either(this.#shared.seed(key, value, expiresAt, now), () =>
      this.#local.seed(key, value, expiresAt, now),
    );
  }

  add(key: string, by: number, expiresAt: number, now: number): MaybePromise<number> {
    if (!this.#health.up) return this.#local.add(key, by, expiresAt, now);
    return this.#either(this.#shared.add(key, by, expiresAt, now), () =>
      this.#local.add(key, by, expiresAt, now),
    );
  }

  reserve(
    key: string,
    amount: number,
    limit: number,
    expiresAt: number,
    now: number,
  ): MaybePromise<Reservation> {
    if (!this.#health.up) return this.#local.reserve(key, amount, limit, expiresAt, now);
    return this.#either(this.#shared.reserve(key, amount, limit, expiresAt, now), () =>
      this.#local.reserve(key, amount, limit, expiresAt, now),
    );
  }

  strike(key: string, now: number, policy: BackoffPolicy): MaybePromise<Strike> {
    if (!this.#health.up) return this.#local.strike(key, now, policy);
    return this.#either(this.#shared.strike(key, now, policy), () => this.#local.strike(key, now, policy));
  }

  waiting(key: string, now: number, policy: BackoffPolicy): MaybePromise<number> {
    if (!this.#health.up) return this.#local.waiting(key, now, policy);
    return this.#either(this.#shared.waiting(key, now, policy), () => this.#local.waiting(key, now, policy));
  }

  coalesce(key: string, now: number, intervalMs: number, trigger: boolean): MaybePromise<number> {
    if (!this.#health.up) return this.#local.coalesce(key, now, intervalMs, trigger);
    return this.#either(this.#shared.coalesce(key, now, intervalMs, trigger), () =>
      this.#local.coalesce(key, now, intervalMs, trigger),
    );
  }

  flushCoalesced(key: string, now: number, intervalMs: number): MaybePromise<number> {
    if (!this.#health.up) return this.#local.flushCoalesced(key, now, intervalMs);
    return this.#either(this.#shared.flushCoalesced(key, now, intervalMs), () =>
      this.#local.flushCoalesced(key, now, intervalMs),
    );
  }

  /** During an outage a part is pooled in memory, and taken back with the shared pool. */
  poolSummary(key: string, part: SummaryPart, expiresAt: number, now: number): MaybePromise<void> {
    if (!this.#health.up) return this.#local.poolSummary(key, part, expiresAt, now);
    return this.#either(this.#shared.poolSummary(key, part, expiresAt, now), () =>
      this.#local.poolSummary(key, part, expiresAt, now),
    );
  }

  /**
   * The shared pool with what memory holds (parts pooled during an outage). Unlike every other
   * call, a take Redis cannot answer rejects, after memory's parts are drained: the other members'
   * parts are out of reach, and the breach handler then sends the parts this process pooled itself,
   * in Redis or in memory, which it keeps until the take (counted twice, never lost).
   */
  takeSummary(key: string, now: number): MaybePromise<SummaryPart | undefined> {
    const local = this.#local.takeSummary(key, now);
    if (!this.#health.up) return Promise.reject(poolOutOfReach());
    const shared = this.#either(this.#shared.takeSummary(key, now), () => {
      throw poolOutOfReach();
    });
    if (local === undefined) return shared;
    return Promise.resolve(shared).then((part) =>
      part === undefined ? local : mergeSummaryParts(part, local),
    );
  }

  close(): void {
    this.#shared.close();
    this.#local.close();
  }

  /** The memory window is live (it changes with the next hit): hand out a copy like Redis does. */
  #memoryHit(key: string, windowMs: number, now: number): WindowCount {
    const w = this.#local.hit(key, windowMs, now);
    return { count: w.count, resetAt: w.resetAt };
  }

  /**
   * The shared answer, or memory's when Redis fails or does not answer in time. The client's own
   * command timeout covers only a command not yet written: one written to a Redis that hangs (a
   * stopped host, a network that drops packets) waited as long as Redis did, and every counted
   * request with it. A late answer is dropped; Redis may have counted it (docs/cluster.md). A
   * `local` that throws makes the call reject (a summary take, which memory cannot answer).
   */
  #either<T>(shared: MaybePromise<T>, local: () => T): MaybePromise<T> {
    if (!(shared instanceof Promise)) return shared;
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const fallBack = (err: unknown): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.#health.suspect(err);
        try {
          resolve(local());
        } catch (refused) {
          reject(refused instanceof Error ? refused : new Error(String(refused)));
        }
      };
      const timer = setTimeout(
        () => fallBack(new Error(`Redis did not answer within ${this.#health.commandTimeoutMs} ms`)),
        this.#health.commandTimeoutMs,
      );
      shared.then((value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(value);
      }, fallBack);
    });
  }
}

function poolOutOfReach(): Error {
  return new Error('Redis is out of reach: the breach summary pool cannot be taken');
}
