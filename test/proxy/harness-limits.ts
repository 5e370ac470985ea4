import type { Logger } from 'pino';
import { PLANS, type PlanLimits } from '../../src/accounts/plans.js';
import { createAnomalyWriter, type AnomalyWriter } from '../../src/anomalies/anomaly-writer.js';
import type { UnauthorizedAttempt } from '../../src/anomalies/record.js';
import type { NewEvent } from '../../src/events/publisher.js';
import { DEFAULT_ANOMALY_SETTINGS } from '../../src/limits/anomaly-model.js';
import { MemoryCounters } from '../../src/limits/counters.js';
import { createLimits, type Limits } from '../../src/limits/index.js';
import type { UsageDeps } from '../../src/proxy/deps.js';
import type { PlanName } from '../../src/store/records.js';
import type { Store } from '../../src/store/store.js';
import { createUsage } from '../../src/usage/create-usage.js';
import type { HarnessOptions } from './harness-types.js';

/** The limits (src/limits) and the prices and budgets (src/usage) of the proxy harness, when asked for. */
export interface HarnessLimitsAndUsage {
  /** The plans, with the harness options' overrides. */
  readonly plans: Record<PlanName, PlanLimits>;
  readonly limits: Limits | undefined;
  readonly anomalyLog: AnomalyWriter | undefined;
  readonly usage: UsageDeps | undefined;
}

/**
 * Builds the limits when `options.limits` is given and the usage when `options.usage` is given.
 * Unauthorized attempts the limits see go to `unauthorized`; every event published goes to `events`.
 */
export function limitsAndUsage(
  options: HarnessOptions,
  deps: {
    readonly store: Store;
    readonly logger: Logger;
    readonly unauthorized: UnauthorizedAttempt[];
    readonly events: NewEvent[];
  },
): HarnessLimitsAndUsage {
  const { store, logger, unauthorized, events } = deps;
  const plans = { ...PLANS, ...options.limits?.plans } as Record<PlanName, PlanLimits>;
  let limits: Limits | undefined;
  let anomalyLog: AnomalyWriter | undefined;
  if (options.limits !== undefined) {
    const writer = createAnomalyWriter({ store, logger, flushIntervalMs: 20 });
    anomalyLog = writer;
    const l = options.limits;
    limits = createLimits({
      config: {
        plans,
        anomalySpikeFactor: l.anomalySpikeFactor ?? DEFAULT_ANOMALY_SETTINGS.spikeFactor,
        anomalyMinRequests: l.anomalyMinRequests ?? DEFAULT_ANOMALY_SETTINGS.minRequests,
        anomalyDistinctIps: l.anomalyDistinctIps ?? DEFAULT_ANOMALY_SETTINGS.distinctIps,
        anomalyWarmupMs: l.anomalyWarmupMs ?? DEFAULT_ANOMALY_SETTINGS.warmupMs,
        workers: 1,
        redis: undefined,
      },
      store,
      anomalies: {
        onUnauthorized: (attempt) => {
          unauthorized.push(attempt);
          writer.onUnauthorized(attempt);
        },
        write: (entry) => writer.write(entry),
      },
      publisher: {
        publish: (event) => {
          events.push(event);
          return Promise.resolve();
        },
      },
      logger,
      now: options.now,
      breachFlushEveryMs: 0,
    });
  }

  const usage =
    options.usage === undefined
      ? undefined
      : createUsage({
          config: {
            prices: options.usage.prices ?? {},
            budgetDefaultReservation: options.usage.defaultReservation ?? 4096,
          },
          store,
          counters: limits?.counters ?? options.usage.counters ?? new MemoryCounters(),
          publisher: {
            publish: (event) => {
              events.push(event);
              return Promise.resolve();
            },
          },
          logger,
          accountTtlMs: options.usage.accountTtlMs,
        });

  return { plans, limits, anomalyLog, usage };
}
