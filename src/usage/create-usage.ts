import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import type { EventPublisher } from '../events/publisher.js';
import type { Counters } from '../limits/counters.js';
import type { UsageDeps } from '../proxy/deps.js';
import type { Store } from '../store/store.js';
import { BudgetGuard } from './budget-guard.js';
import { PriceTable } from './prices.js';

export interface UsageOptions {
  readonly config: Pick<Config, 'prices' | 'budgetDefaultReservation'>;
  readonly store: Pick<Store, 'accounts' | 'usageModelRollups' | 'jobLeases'>;
  /** The limits' counters: budgets are shared exactly as far as rate limits are. */
  readonly counters: Counters;
  readonly publisher: EventPublisher;
  readonly logger?: Logger | undefined;
  readonly accountTtlMs?: number | undefined;
}

/** Prices and budgets for the proxy (src/server/start.ts, the test harness). */
export function createUsage(options: UsageOptions): UsageDeps {
  const prices = new PriceTable(options.config.prices);
  return {
    prices,
    defaultReservation: options.config.budgetDefaultReservation,
    budgets: new BudgetGuard({
      counters: options.counters,
      prices,
      store: options.store,
      publisher: options.publisher,
      logger: options.logger,
      accountTtlMs: options.accountTtlMs,
    }),
  };
}
