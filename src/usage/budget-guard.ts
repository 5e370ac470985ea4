import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { errorName } from '../errors/summary.js';
import type { EventPublisher } from '../events/publisher.js';
import type { Counters, MaybePromise } from '../limits/counters.js';
import { StoreUnavailableError } from '../store/errors.js';
import type { UsageModelRollupRepo } from '../store/rollup-records.js';
import type { TokenRecord } from '../store/records.js';
import type { AccountRepo, JobLeaseRepo } from '../store/store.js';
import { budgetLimit, describeBudget, isUsdBudget, periodWindow, type Budget } from './budget.js';
import { costMicros, type Price, type PriceTable } from './prices.js';

/** `budget.threshold_reached` once per period when the spend reaches this share of the budget. */
export const BUDGET_THRESHOLD = 0.8;
/** An account's budget is trusted this long before it is read again (a change applies within it). */
export const ACCOUNT_BUDGET_TTL_MS = 10_000;
/** A `total` budget's counter is re-seeded from the store at least this often (counters need an end). */
const TOTAL_COUNTER_MS = 400 * 24 * 3600 * 1000;
const MAX_ENTRIES = 100_000;
/** Marks of past periods are deleted at most this often (one row per budget event and period). */
const PURGE_MARKS_EVERY_MS = 60 * 60 * 1000;

export type BudgetScope = 'token' | 'account';

/** One reserved budget of a request. */
interface Held {
  readonly scope: BudgetScope;
  readonly budget: Budget;
  readonly key: string;
  readonly amount: number;
  readonly limit: number;
  readonly expiresAt: number;
  readonly period: string;
}

/** What a request reserved, to settle when it is over. */
export interface Hold {
  readonly accountId: string;
  readonly tokenId: string;
  readonly provider: string;
  /** What was reserved for: the parts of the usage a provider does not report are charged at it. */
  readonly worst: WorstCase;
  readonly held: readonly Held[];
}

export interface BudgetRefusal {
  readonly refused: true;
  readonly scope: BudgetScope;
  readonly budget: Budget;
  /** When the period ends (ms since the epoch); null for a `total` budget, which never resets. */
  readonly resetsAt: number | null;
}

/** The worst case of a request, from its body (src/usage/request-hints.ts). */
export interface WorstCase {
  readonly model: string | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export interface ActualUsage {
  readonly model: string | null;
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
}

export interface BudgetGuardOptions {
  readonly counters: Counters;
  readonly prices: PriceTable;
  readonly store: {
    readonly accounts: Pick<AccountRepo, 'get'>;
    readonly usageModelRollups: Pick<UsageModelRollupRepo, 'spent'>;
    /** Holds the once-per-period marks of the budget events, so a restart does not send them again. */
    readonly jobLeases: Pick<JobLeaseRepo, 'acquire' | 'purgeExpired'>;
  };
  readonly publisher: EventPublisher;
  readonly logger?: Logger | undefined;
  readonly accountTtlMs?: number | undefined;
}

interface AccountBudget {
  budget: Budget | null;
  loadedAt: number;
  refreshing: boolean;
  pending: Promise<void> | null;
}

/**
 * Budgets that hold under concurrency (issue 19). Before a budgeted request is forwarded its worst
 * case is reserved with one atomic `counters.reserve` per budget (the token's, then its account's):
 * a reservation that would pass the budget is refused, so however many requests run at once the
 * reserved sum never passes it. When the request is over, the difference to what the provider
 * reported is settled with `counters.add` (an upstream error or a client gone before any usage
 * settles at 0, releasing everything). The counters are shared, so with a shared implementation the
 * same holds across processes.
 *
 * A counter starts, per period and process, from what the store's rollups say was spent in the
 * period; tokens without a budget, in accounts without one, cost one map lookup.
 */
export class BudgetGuard {
  readonly #o: BudgetGuardOptions;
  readonly #ttl: number;
  readonly #accounts = new Map<string, AccountBudget>();
  /** Counter keys this process has seeded from the store, with when the counter ends. */
  readonly #seeded = new Map<string, number>();
  #nextMarkPurge = 0;
  /** Flags this process has claimed or seen claimed: those events are not sent again from here. */
  readonly #fired = new Set<string>();

  constructor(options: BudgetGuardOptions) {
    this.#o = options;
    this.#ttl = options.accountTtlMs ?? ACCOUNT_BUDGET_TTL_MS;
  }

  /** Forgets the accounts' budgets: the next request reads them again (PATCH /v1/account). */
  forgetAccounts(): void {
    this.#accounts.clear();
  }

  /** Whether the request needs a reservation: the token or its account has a budget. */
  applies(token: TokenRecord, now: number): MaybePromise<boolean> {
    if (token.budget !== null && token.budget !== undefined) return true;
    const state = this.#accounts.get(token.accountId);
    if (state === undefined || state.pending !== null) {
      return this.#account(token.accountId, now).then((s) => s.budget !== null);
    }
    if (now - state.loadedAt >= this.#ttl && !state.refreshing) this.#refresh(token.accountId, state, now);
    return state.budget !== null;
  }

  /** Reserves the worst case in every budget of the request, or refuses naming the budget. */
  async reserve(
    token: TokenRecord,
    provider: string,
    worst: WorstCase,
    now: number,
  ): Promise<Hold | BudgetRefusal> {
    const budgets: [BudgetScope, Budget][] = [];
    if (token.budget !== null && token.budget !== undefined) budgets.push(['token', token.budget]);
    const account = (await this.#account(token.accountId, now)).budget;
    if (account !== null) budgets.push(['account', account]);
    const held: Held[] = [];
    const totals: number[] = [];
    for (const [scope, budget] of budgets) {
      const window = periodWindow(budget.period, now);
      const expiresAt = Math.min(window.end, now + TOTAL_COUNTER_MS);
      const id = scope === 'token' ? token.id : token.accountId;
      const key = `budget:${scope}:${id}:${window.name}`;
      const usd = isUsdBudget(budget);
      await this.#seed(
        key,
        usd,
        token.accountId,
        scope === 'token' ? token.id : null,
        window.start,
        expiresAt,
        now,
      );
      const amount = usd
        ? reservedCost(this.#priceOf(provider, worst.model), worst.inputTokens, worst.outputTokens)
        : worst.inputTokens + worst.outputTokens;
      const limit = budgetLimit(budget);
      const r = await this.#o.counters.reserve(key, amount, limit, expiresAt, now);
      if (!r.ok) {
        this.#release(held, now);
        this.#once(`budget-exceeded:${key}`, expiresAt, now, token.accountId, 'budget.exceeded', () =>
          eventData(scope, token, budget, window.name, r.total),
        );
        return { refused: true, scope, budget, resetsAt: budget.period === 'total' ? null : window.end };
      }
      held.push({ scope, budget, key, amount, limit, expiresAt, period: window.name });
      totals.push(r.total);
    }
    // Reserved plus settled spend is what the threshold is about (docs/usage.md, "Events"): a burst
    // of concurrent requests reaches it before any of them settles. Only once every budget has
    // reserved: a reservation that another budget then refused is rolled back, and never counted.
    held.forEach((h, i) => {
      const total = totals[i] as number;
      if (total < h.limit * BUDGET_THRESHOLD) return;
      this.#once(`budget-80:${h.key}`, h.expiresAt, now, token.accountId, 'budget.threshold_reached', () =>
        eventData(h.scope, token, h.budget, h.period, total),
      );
    });
    return { accountId: token.accountId, tokenId: token.id, provider, worst, held };
  }

  /**
   * Replaces the reserved worst case by the usage of an answered request. `unreported` says what a
   * part the provider did not report costs: 0 for a whole answer that simply has none (a model list,
   * an embedding's output), its worst case for a stream or an answer cut short, whose usage may have
   * been lost (counted as 0, streamed requests ran on a budget for free). Never throws, never waits.
   */
  settle(hold: Hold, actual: ActualUsage, unreported: 'zero' | 'worst', now: number): void {
    const worst = unreported === 'worst';
    const input = actual.inputTokens ?? (worst ? hold.worst.inputTokens : 0);
    const output = actual.outputTokens ?? (worst ? hold.worst.outputTokens : 0);
    const model = actual.model ?? hold.worst.model;
    const tokens = input + output;
    let cost: number | null = null;
    for (const h of hold.held) {
      if (isUsdBudget(h.budget)) cost ??= reservedCost(this.#priceOf(hold.provider, model), input, output);
      const spent = isUsdBudget(h.budget) ? (cost as number) : tokens;
      const delta = spent - h.amount;
      const after = (total: number): void => {
        if (delta <= 0 && spent === 0) return;
        if (total >= h.limit * BUDGET_THRESHOLD) {
          this.#once(`budget-80:${h.key}`, h.expiresAt, now, hold.accountId, 'budget.threshold_reached', () =>
            eventData(h.scope, hold, h.budget, h.period, total),
          );
        }
        if (total >= h.limit) {
          this.#once(`budget-exceeded:${h.key}`, h.expiresAt, now, hold.accountId, 'budget.exceeded', () =>
            eventData(h.scope, hold, h.budget, h.period, total),
          );
        }
      };
      try {
        const total = this.#o.counters.add(h.key, delta, h.expiresAt, now);
        if (total instanceof Promise) total.then(after, (err: unknown) => this.#failed(err, 'settle'));
        else after(total);
      } catch (err) {
        this.#failed(err, 'settle');
      }
    }
  }

  /** The model's price, else the provider's highest (a USD budget never lets an unlisted model run free). */
  #priceOf(provider: string, model: string | null): Price | undefined {
    return this.#o.prices.lookup(provider, model) ?? this.#o.prices.highest(provider);
  }

  /**
   * Gives a reservation back whole: the request spent nothing (refused upstream with no usage, the
   * provider unreachable, the client gone before an answer). Never throws, never waits.
   */
  release(hold: Hold, now: number): void {
    this.#release(hold.held, now);
  }

  #release(held: readonly Held[], now: number): void {
    for (const h of held) {
      try {
        const r = this.#o.counters.add(h.key, -h.amount, h.expiresAt, now);
        if (r instanceof Promise) r.catch((err: unknown) => this.#failed(err, 'release'));
      } catch (err) {
        this.#failed(err, 'release');
      }
    }
  }

  async #seed(
    key: string,
    usd: boolean,
    accountId: string,
    tokenId: string | null,
    from: string,
    expiresAt: number,
    now: number,
  ): Promise<void> {
    const until = this.#seeded.get(key);
    if (until !== undefined && now < until) return;
    const spent = await this.#o.store.usageModelRollups.spent(accountId, tokenId, from);
    await this.#o.counters.seed(key, usd ? spent.costMicros : spent.tokens, expiresAt, now);
    if (this.#seeded.size >= MAX_ENTRIES) this.#seeded.clear();
    this.#seeded.set(key, expiresAt);
  }

  /**
   * Publishes `type` once per `flag` and period. The store's mark makes it once across processes and
   * restarts (the claim is atomic); each process asks it once per flag, and knows the answer after.
   */
  #once(
    flag: string,
    expiresAt: number,
    now: number,
    accountId: string,
    type: 'budget.threshold_reached' | 'budget.exceeded',
    data: () => Record<string, unknown>,
  ): void {
    // Claimed already, here or elsewhere: no store to ask, no event data to build.
    if (this.#fired.has(flag)) return;
    this.#markFired(flag);
    const leases = this.#o.store.jobLeases;
    const nowIso = new Date(now).toISOString();
    leases
      .acquire(`once:${flag}`, randomUUID(), nowIso, new Date(expiresAt).toISOString())
      .then(
        (first) => (first ? this.#o.publisher.publish({ accountId, type, data: data() }) : undefined),
        (err: unknown) => {
          // Nothing was claimed (the store refused the write): the next request over the threshold
          // claims again, so the event is late rather than lost.
          if (err instanceof StoreUnavailableError) this.#fired.delete(flag);
          throw err;
        },
      )
      .catch((err: unknown) => this.#failed(err, 'event'));
    if (now >= this.#nextMarkPurge) {
      this.#nextMarkPurge = now + PURGE_MARKS_EVERY_MS;
      leases.purgeExpired(nowIso).catch((err: unknown) => this.#failed(err, 'mark purge'));
    }
  }

  #markFired(flag: string): void {
    if (this.#fired.size >= MAX_ENTRIES) this.#fired.clear();
    this.#fired.add(flag);
  }

  #account(accountId: string, now: number): Promise<AccountBudget> {
    let state = this.#accounts.get(accountId);
    if (state !== undefined && state.pending === null && now - state.loadedAt < this.#ttl) {
      return Promise.resolve(state);
    }
    if (state === undefined) {
      if (this.#accounts.size >= MAX_ENTRIES) this.#accounts.clear();
      state = { budget: null, loadedAt: 0, refreshing: false, pending: null };
      this.#accounts.set(accountId, state);
    }
    const s = state;
    s.pending ??= this.#o.store.accounts.get(accountId).then(
      (account) => {
        s.budget = account?.budget ?? null;
        s.loadedAt = now;
        s.pending = null;
      },
      (err: unknown) => {
        // Keep what we knew; ask again on the next request.
        s.pending = null;
        this.#failed(err, 'account lookup');
      },
    );
    return s.pending.then(() => s);
  }

  #refresh(accountId: string, state: AccountBudget, now: number): void {
    state.refreshing = true;
    this.#o.store.accounts.get(accountId).then(
      (account) => {
        state.budget = account?.budget ?? null;
        state.loadedAt = now;
        state.refreshing = false;
      },
      (err: unknown) => {
        state.refreshing = false;
        this.#failed(err, 'account lookup');
      },
    );
  }

  #failed(err: unknown, what: string): void {
    this.#o.logger?.error({ err: errorName(err) }, `budget ${what} failed`);
  }
}

export function isRefusal(result: Hold | BudgetRefusal): result is BudgetRefusal {
  return 'refused' in result;
}

function reservedCost(price: Price | undefined, input: number, output: number): number {
  return costMicros(price, input, output) ?? 0;
}

function eventData(
  scope: BudgetScope,
  who: { readonly accountId: string; readonly id?: string; readonly tokenId?: string },
  budget: Budget,
  period: string,
  used: number,
): Record<string, unknown> {
  const usd = isUsdBudget(budget);
  return {
    scope,
    token_id: scope === 'token' ? (who.tokenId ?? who.id ?? null) : null,
    budget: { ...budget },
    period,
    limit: usd ? budget.amount_usd : budget.tokens,
    used: usd ? Math.round(used) / 1_000_000 : used,
    unit: usd ? 'usd' : 'tokens',
    description: describeBudget(budget),
  };
}
