import { createUsageWriter, type RequestLogWriterOptions } from '../../src/requestlog/batch-writer.js';
import type { RequestLogRecord } from '../../src/requestlog/record.js';
import { UsageTally } from '../../src/requestlog/usage-tally.js';
import type { RequestLogEntry, TokenRecord } from '../../src/store/records.js';
import type { Store, TokenUsage } from '../../src/store/store.js';
import { createToken, newAccount } from '../store/helpers.js';
import { store } from '../store/store-suite.js';
import { capture } from './helpers.js';

// Shared by the batch-writer suites, which run on the database that `useDatabase` (store-suite.ts) opened.

/**
 * The real store, with its calls counted and failures switched on at will: `fail` decides per call
 * whether to throw instead of reaching the database.
 */
export function instrumented(store: Store) {
  const calls = { insertMany: [] as number[], recordUsage: [] as TokenUsage[][] };
  let fail: ((what: 'insertMany' | 'recordUsage') => Error | undefined) | undefined;
  const wrapped: RequestLogWriterOptions['store'] & { tokens: Pick<Store['tokens'], 'recordUsage'> } = {
    requestLogs: {
      insertMany(entries: readonly RequestLogEntry[]) {
        calls.insertMany.push(entries.length);
        const error = fail?.('insertMany');
        return error === undefined ? store.requestLogs.insertMany(entries) : Promise.reject(error);
      },
    },
    tokens: {
      recordUsage(batch: readonly TokenUsage[]) {
        calls.recordUsage.push([...batch]);
        const error = fail?.('recordUsage');
        return error === undefined ? store.tokens.recordUsage(batch) : Promise.reject(error);
      },
    },
  };
  return {
    store: wrapped,
    calls,
    failWith(decide: typeof fail) {
      fail = decide;
    },
  };
}

export async function tokenOf(): Promise<TokenRecord> {
  const { account } = await newAccount(store);
  return createToken(store, account.id);
}

/** Usage as the proxy's thread counts it (usage-tally.ts) and the worker stores it. */
export async function countUsage(
  records: readonly RequestLogRecord[],
  target: Parameters<typeof createUsageWriter>[0]['store'] = store,
): Promise<void> {
  const tally = new UsageTally();
  for (const r of records) tally.add(r);
  const usage = createUsageWriter({ store: target, logger: capture().logger, flushIntervalMs: 5 });
  usage.write(tally.take());
  await usage.flush();
  await usage.close();
}

export async function stored(accountId: string): Promise<string[]> {
  const page = await store.requestLogs.list(accountId, {}, { limit: 100 });
  return page.items.map((item) => item.id);
}
