import type { Logger } from 'pino';
import { errorName } from '../errors/summary.js';
import { planLimits, type PlanLimits } from '../accounts/plans.js';
import type { PlanName } from '../store/records.js';
import type { Counters, MaybePromise } from './counters.js';
import { retryAfterSeconds } from './ip-backoff.js';

/** DESIGN §6: `quota.threshold_reached` once per period when usage crosses 80% of the plan limit. */
export const QUOTA_THRESHOLD = 0.8;
/**
 * How long an account's plan is trusted before it is read again: `tokenproxy accounts set-plan` runs in
 * another process, so this bounds how long a plan change takes to reach the proxy (about a second).
 */
export const PLAN_TTL_MS = 1_000;
/** After a failed store read, requests pass unchecked for this long before the store is asked again. */
const RETRY_AFTER_FAILURE_MS = 1_000;
const MAX_ACCOUNTS = 100_000;

/** `check` admitted the request and counted it: `uncount` gives it back if it is not forwarded. */
export const COUNTED = 0;
/** `check` admitted the request without counting it: no quota applies, or the store could not say. */
export const UNCOUNTED = -1;

export interface QuotaThreshold {
  readonly accountId: string;
  readonly plan: PlanName;
  readonly limit: number;
  readonly used: number;
  readonly period: string;
}

export interface AccountQuotasOptions {
  readonly counters: Counters;
  readonly plans: Readonly<Record<PlanName, PlanLimits>>;
  /** The account's plan; undefined for an unknown account (never limited). */
  readonly planOf: (accountId: string) => Promise<PlanName | undefined>;
  /** Forwarded requests the store has counted for the account in `period` (`YYYY-MM`). */
  readonly storedUsage: (accountId: string, period: string) => Promise<number>;
  readonly onThreshold: (crossed: QuotaThreshold) => void;
  readonly logger?: Logger | undefined;
  readonly planTtlMs?: number | undefined;
}

interface Period {
  readonly name: string;
  readonly start: number;
  readonly end: number;
}

interface AccountState {
  plan: PlanName | undefined;
  loadedAt: number;
  refreshing: boolean;
  /** Counter key of the period whose stored usage this process has seeded, or null. */
  seededKey: string | null;
  seededPeriod: string | null;
  /** A load or seed in flight, shared by the requests that wait for it. */
  pending: Promise<void> | null;
  /** Store reads failed: pass requests unchecked until then. */
  failedUntil: number;
}

/**
 * Monthly plan quotas (calendar month, UTC). The live count of an account is the store's usage for
 * the month, read once per account and period, plus every request admitted since; only the first
 * request of an account in a period waits for the store. Plans are cached for PLAN_TTL_MS and
 * refreshed in the background, so the hot path stays synchronous.
 *
 * Answers COUNTED or UNCOUNTED to admit, or the seconds until the quota resets (the next month) to
 * refuse. Store failures admit: a quota is a billing limit, not a security check, and the token was
 * already verified. Only forwarded requests count (docs/limits.md): a refused one's count is given
 * back at once, and an admitted one that is refused later (a budget, the provider unreachable) is
 * given back by `uncount`.
 */
export class AccountQuotas {
  readonly #o: AccountQuotasOptions;
  readonly #ttl: number;
  readonly #accounts = new Map<string, AccountState>();
  #period: Period = { name: '', start: 0, end: 0 };

  constructor(options: AccountQuotasOptions) {
    this.#o = options;
    this.#ttl = options.planTtlMs ?? PLAN_TTL_MS;
  }

  check(accountId: string, now: number): MaybePromise<number> {
    const period = this.#periodAt(now);
    const state = this.#accounts.get(accountId);
    if (state === undefined) return this.#wait(accountId, this.#newState(accountId, now), now);
    if (state.pending !== null) return this.#wait(accountId, state, now);
    if (now < state.failedUntil) return UNCOUNTED;
    if (now - state.loadedAt >= this.#ttl && !state.refreshing) this.#refresh(accountId, state, now);
    const plan = state.plan;
    const limit = plan === undefined ? null : planLimits(this.#o.plans, plan).requestsPerMonth;
    if (limit === null || plan === undefined) return UNCOUNTED;
    if (state.seededPeriod !== period.name) {
      state.pending = this.#seed(accountId, state, period, now);
      return this.#wait(accountId, state, now);
    }
    const key = state.seededKey as string;
    const used = this.#o.counters.add(key, 1, period.end, now);
    return used instanceof Promise
      ? used.then((n) => this.#judge(accountId, plan, limit, n, key, period, now))
      : this.#judge(accountId, plan, limit, used, key, period, now);
  }

  /** Gives back the count of a request `check` answered COUNTED for, which was not forwarded. */
  uncount(accountId: string, now: number): void {
    const state = this.#accounts.get(accountId);
    const period = this.#periodAt(now);
    // A month that turned in between has a count of its own, which this request never reached.
    if (state?.seededKey == null || state.seededPeriod !== period.name) return;
    this.#giveBack(state.seededKey, period, now);
  }

  /**
   * Forgets every account's plan and seeded usage: the next request of each reads the store again.
   * After a plan change elsewhere, and when the counters switch between Redis and memory (the other
   * side has to be seeded from the store).
   */
  forget(): void {
    this.#accounts.clear();
  }

  /** For a refused request: the account's plan limit and the end of the period (an ISO date). */
  refusal(accountId: string, now: number): { limit: number; resetsAt: string } | undefined {
    const plan = this.#accounts.get(accountId)?.plan;
    const limit = plan === undefined ? null : planLimits(this.#o.plans, plan).requestsPerMonth;
    if (limit === null) return undefined;
    return { limit, resetsAt: new Date(this.#periodAt(now).end).toISOString() };
  }

  #judge(
    accountId: string,
    plan: PlanName,
    limit: number,
    used: number,
    key: string,
    period: Period,
    now: number,
  ): number {
    // Exactly one admitted request makes the count reach the threshold, so the event is sent once
    // per period, also when the count started above it (the store's usage from before a restart).
    if (used === Math.ceil(limit * QUOTA_THRESHOLD) && used <= limit && used > 0) {
      this.#claimThreshold(accountId, period, now, () =>
        this.#o.onThreshold({ accountId, plan, limit, used, period: period.name }),
      );
    }
    if (used <= limit) return COUNTED;
    // Refused requests do not count: left in, they would hold the quota shut for requests that a
    // count given back later (a failed forward) had made room for.
    this.#giveBack(key, period, now);
    return Math.max(1, retryAfterSeconds(period.end - now));
  }

  #giveBack(key: string, period: Period, now: number): void {
    try {
      const left = this.#o.counters.add(key, -1, period.end, now);
      if (left instanceof Promise) left.catch((err: unknown) => this.#gaveBackFailed(err));
    } catch (err) {
      this.#gaveBackFailed(err);
    }
  }

  #gaveBackFailed(err: unknown): void {
    this.#o.logger?.error({ err: errorName(err) }, 'giving back a quota count failed');
  }

  /**
   * The count can reach the threshold twice in a period when the shared count is lost and seeded
   * again (a Redis restart): a set-once marker, claimed atomically by whoever seeds it with its own
   * nonce, keeps the event to one per period across the cluster.
   */
  #claimThreshold(accountId: string, period: Period, now: number, send: () => void): void {
    const nonce = 1 + Math.floor(Math.random() * 2 ** 48);
    const held = this.#o.counters.seed(`quota-80:${accountId}:${period.name}`, nonce, period.end, now);
    if (!(held instanceof Promise)) {
      if (held === nonce) send();
      return;
    }
    held.then(
      (value) => {
        if (value === nonce) send();
      },
      (err: unknown) => this.#o.logger?.error({ err: errorName(err) }, 'quota threshold claim failed'),
    );
  }

  async #wait(accountId: string, state: AccountState, now: number): Promise<number> {
    await state.pending;
    return this.check(accountId, now);
  }

  #newState(accountId: string, now: number): AccountState {
    if (this.#accounts.size >= MAX_ACCOUNTS) {
      const oldest = this.#accounts.keys().next();
      if (oldest.done !== true) this.#accounts.delete(oldest.value);
    }
    const state: AccountState = {
      plan: undefined,
      loadedAt: 0,
      refreshing: false,
      seededKey: null,
      seededPeriod: null,
      pending: null,
      failedUntil: 0,
    };
    this.#accounts.set(accountId, state);
    state.pending = this.#o.planOf(accountId).then(
      (plan) => {
        state.plan = plan;
        state.loadedAt = now;
        state.pending = null;
      },
      (err: unknown) => this.#failed(state, now, err),
    );
    return state;
  }

  #refresh(accountId: string, state: AccountState, now: number): void {
    state.refreshing = true;
    this.#o.planOf(accountId).then(
      (plan) => {
        state.plan = plan;
        state.loadedAt = now;
        state.refreshing = false;
      },
      (err: unknown) => {
        // Keep the plan we had; ask again after the retry delay.
        state.refreshing = false;
        state.loadedAt = now - this.#ttl + RETRY_AFTER_FAILURE_MS;
        this.#o.logger?.error({ err: errorName(err) }, 'plan lookup for quotas failed');
      },
    );
  }

  #seed(accountId: string, state: AccountState, period: Period, now: number): Promise<void> {
    const key = `quota:${accountId}:${period.name}`;
    return this.#o.storedUsage(accountId, period.name).then(
      (stored) => {
        const seeded = this.#o.counters.seed(key, stored, period.end, now);
        const done = (): void => {
          state.seededKey = key;
          state.seededPeriod = period.name;
          state.pending = null;
        };
        if (seeded instanceof Promise) return seeded.then(done);
        done();
        return undefined;
      },
      (err: unknown) => this.#failed(state, now, err),
    );
  }

  #failed(state: AccountState, now: number, err: unknown): void {
    state.pending = null;
    state.failedUntil = now + RETRY_AFTER_FAILURE_MS;
    this.#o.logger?.error({ err: errorName(err) }, 'account lookup for quotas failed; admitting');
  }

  /** The calendar month (UTC) of `now`; a Date is built only when the month changes. */
  #periodAt(now: number): Period {
    const p = this.#period;
    if (now >= p.start && now < p.end) return p;
    const d = new Date(now);
    const year = d.getUTCFullYear();
    const month = d.getUTCMonth();
    this.#period = {
      name: `${year}-${String(month + 1).padStart(2, '0')}`,
      start: Date.UTC(year, month, 1),
      end: Date.UTC(year, month + 1, 1),
    };
    return this.#period;
  }
}
