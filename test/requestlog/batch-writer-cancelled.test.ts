import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import { createRequestLogWriter } from '../../src/requestlog/batch-writer.js';
import { openStoreWithoutMigrating } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { databases } from '../support/databases.js';
import { opened, useDatabase } from '../store/store-suite.js';
import { instrumented, stored, tokenOf } from './batch-writer-helpers.js';
import { capture, record } from './helpers.js';

const postgres = databases.find((fixture) => fixture.name === 'postgres');

/**
 * A batch PostgreSQL cancels (a `lock_timeout` or `statement_timeout` the operator set, while
 * something holds the table) was stored not at all: it must wait and be tried again, as for an
 * unreachable database, not be given up after a few tries with the records it holds.
 */
describe.skipIf(!postgres?.available)('request-log writer on a PostgreSQL that cancels its batches', () => {
  if (postgres !== undefined) useDatabase(postgres);
  let timed: Store | undefined;
  afterAll(async () => {
    await timed?.close();
  });

  it('keeps the records while their batch is cancelled and stores every one once it passes', async () => {
    const token = await tokenOf();
    const url = new URL(opened.database ?? '');
    url.searchParams.set('options', '-c lock_timeout=50');
    timed = await openStoreWithoutMigrating({
      database: url.toString(),
      dataDir: opened.dataDir,
      logWriter: true,
    });
    const probe = instrumented(timed);
    const log = capture();
    const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
    const writer = createRequestLogWriter({
      store: probe.store,
      logger: log.logger,
      flushIntervalMs: 5,
      maxAttempts: 2,
      metrics: metrics.queue('request_log'),
    });
    const holder = new pg.Client({ connectionString: opened.database });
    await holder.connect();
    let held = true;
    try {
      await holder.query('begin');
      await holder.query('lock table request_logs in access exclusive mode');
      const records = Array.from({ length: 20 }, (_, i) =>
        record({ accountId: token.accountId, tokenId: token.id, path: `/openai/v1/cancelled/${i}` }),
      );
      for (const r of records) writer.write(r);
      // Well past maxAttempts: a cancelled batch is not a batch that can never be stored.
      await vi.waitFor(() => expect(probe.calls.insertMany.length).toBeGreaterThan(4), { timeout: 10_000 });
      expect(writer.size).toBe(records.length);
      const warned = log.entries().find((line) => line.level === 'warn');
      expect(String(warned?.reason)).toContain('cancelled the statement');

      await holder.query('rollback');
      held = false;
      await writer.flush();
      expect((await stored(token.accountId)).sort()).toEqual(records.map((r) => r.requestId).sort());
      expect(await metrics.registry.metrics()).toMatch(
        /^tokenproxy_log_dropped_total\{queue="request_log",reason="store_failed"\} 0$/m,
      );
      expect(log.entries().filter((line) => line.level === 'error')).toEqual([]);
    } finally {
      if (held) await holder.query('rollback');
      await holder.end();
      await writer.close();
    }
  });
});
