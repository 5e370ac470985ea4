import type { Logger } from 'pino';
import { errorName } from '../errors/summary.js';
import type { PlanLimits } from '../accounts/plans.js';
import type { EventPublisher } from '../events/publisher.js';
import type { AnomalyEntry, PlanName, TokenRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { createAnomalyDetector, type ObservedSource } from './anomaly-detector.js';
import type { AnomalySettings } from './anomaly-model.js';
import type { Counters, MaybePromise } from './counters.js';
import { IpBackoff } from './ip-backoff.js';
import { AccountQuotas, COUNTED } from './quota.js';
import { TokenRateLimits, type RateVerdict } from './rate-limit.js';

export type LimitRefusal = 'rate_limited' | 'quota_exceeded';

/** What the limits say about an authorized request. */
export interface Admission {
  /** Null: forward it. */
  readonly refuse: LimitRefusal | null;
  /** Response headers as name/value pairs (`RateLimit-*`, `Retry-After`), or null for none. */
  readonly headers: readonly string[] | null;
  /** With `quota_exceeded`: the plan's monthly limit and when the quota resets, for the message. */
  readonly quota?: QuotaRefusal | undefined;
  /** Admitted and counted against the plan quota: `uncount` it if it is not forwarded after all. */
  readonly counted?: boolean | undefined;
}

export interface QuotaRefusal {
  readonly limit: number;
  /** ISO 8601 UTC: the start of the next calendar month. */
  readonly resetsAt: string;
}

/**
 * What the proxy asks of the limits, in DESIGN §4 order. Every method answers synchronously with
 * in-memory counters; with a networked implementation some answer promises, which the proxy awaits
 * (it checks `instanceof Promise`, so the synchronous path never awaits).
 */
export interface ProxyLimits {
  /**
   * Before answering a 401/403: counts the refused attempt for `ip`. 0 = answer the 401/403;
   * otherwise the IP is in backoff: answer 429 `ip_backoff` with this many seconds of `Retry-After`.
   */
  unauthorized(ip: string, now: number): MaybePromise<number>;
  /** After the origin and IP checks passed: the token's rate limit, then the account's quota. */
  admit(token: TokenRecord, now: number): MaybePromise<Admission>;
  /**
   * An admitted request (`counted`) that was not forwarded after all (a budget refused it, the
   * provider could not be reached): its plan-quota count is given back. Never waits, never throws.
   */
  uncount(token: TokenRecord, now: number): void;
  /** Feeds the anomaly model with an authorized request. Never waits, never throws. */
  observe(token: TokenRecord, now: number, ip: string, country: string | null, source: ObservedSource): void;
  /** Forgets cached account state (plans, seeded quota usage): an account changed, or the counters did. */
  forgetAccounts(): void;
  close(): void;
}

export interface ProxyLimitsOptions {
  readonly counters: Counters;
  readonly store: Pick<Store, 'accounts'>;
  readonly plans: Readonly<Record<PlanName, PlanLimits>>;
  readonly publisher: EventPublisher;
  readonly anomalies: { write(entry: AnomalyEntry): void };
  readonly anomaly: AnomalySettings;
  readonly logger?: Logger | undefined;
  readonly planTtlMs?: number | undefined;
}

const ADMITTED: Admission = Object.freeze({ refuse: null, headers: null });
const ADMITTED_COUNTED: Admission = Object.freeze({ refuse: null, headers: null, counted: true });

export function createProxyLimits(options: ProxyLimitsOptions): ProxyLimits {
  const { counters, store, publisher, logger } = options;
  const backoff = new IpBackoff(counters);
  const rates = new TokenRateLimits(counters);
  const quotas = new AccountQuotas({
    counters,
    plans: options.plans,
    planTtlMs: options.planTtlMs,
    logger,
    planOf: async (accountId) => (await store.accounts.get(accountId))?.plan,
    storedUsage: (accountId, period) => store.accounts.usage(accountId, period),
    onThreshold: ({ accountId, plan, limit, used, period }) => {
      publisher
        .publish({ accountId, type: 'quota.threshold_reached', data: { plan, limit, used, period } })
        .catch((err: unknown) => logger?.error({ err: errorName(err) }, 'quota event not recorded'));
    },
  });
  const detector = createAnomalyDetector({
    settings: options.anomaly,
    anomalies: options.anomalies,
    publisher,
    logger,
  });

  function afterRate(token: TokenRecord, now: number, rate: RateVerdict | null): MaybePromise<Admission> {
    if (rate !== null && !rate.allowed) return { refuse: 'rate_limited', headers: rate.headers };
    const quota = quotas.check(token.accountId, now);
    const judged = (wait: number): Admission =>
      admission(rate, wait, wait > 0 ? quotas.refusal(token.accountId, now) : undefined);
    return quota instanceof Promise ? quota.then(judged) : judged(quota);
  }

  return {
    unauthorized: (ip, now) => backoff.strike(ip, now),
    admit(token, now) {
      const rate = rates.check(token, now);
      return rate instanceof Promise
        ? rate.then((r) => afterRate(token, now, r))
        : afterRate(token, now, rate);
    },
    observe(token, now, ip, country, source) {
      try {
        detector.observe(token.id, now, ip, country, source);
      } catch (err) {
        logger?.error({ err: errorName(err) }, 'anomaly detection failed');
      }
    },
    // Never throws: the quota logs a count it could not give back.
    uncount: (token, now) => quotas.uncount(token.accountId, now),
    forgetAccounts() {
      quotas.forget();
    },
    close() {
      detector.close();
      counters.close();
    },
  };
}

function admission(rate: RateVerdict | null, quotaWait: number, quota?: QuotaRefusal): Admission {
  if (quotaWait > 0) {
    const headers = rate === null ? [] : rate.headers.slice();
    headers.push('Retry-After', String(quotaWait));
    return { refuse: 'quota_exceeded', headers, quota };
  }
  const counted = quotaWait === COUNTED;
  if (rate === null) return counted ? ADMITTED_COUNTED : ADMITTED;
  return { refuse: null, headers: rate.headers, counted };
}
