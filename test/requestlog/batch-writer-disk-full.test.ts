import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import { createRequestLogWriter } from '../../src/requestlog/batch-writer.js';
import { databases } from '../support/databases.js';
import { storeDb } from '../support/store-internals.js';
import { store, useDatabase } from '../store/store-suite.js';
import { instrumented, stored, tokenOf } from './batch-writer-helpers.js';
import { capture, record } from './helpers.js';

const sqlite = databases.find((fixture) => fixture.name === 'sqlite');
if (sqlite === undefined) throw new Error('the SQLite fixture is missing');

/**
 * A full disk ends when the operator frees space; the records of the requests served meanwhile must
 * wait for it (bounded by the queue), not be given up after a few seconds of retries. SQLite's
 * `max_page_count` makes it answer SQLITE_FULL exactly as a full file system does.
 */
describe('request-log writer on a full SQLite disk', () => {
  useDatabase(sqlite);

  async function maxPages(pages: number | 'current'): Promise<void> {
    const db = storeDb(store);
    const count =
      pages === 'current'
        ? ((await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows[0]?.page_count ?? 0)
        : pages;
    await sql.raw(`pragma max_page_count = ${count}`).execute(db);
  }

  it('keeps the records while the disk is full and stores every one once space is back', async () => {
    const token = await tokenOf();
    const probe = instrumented(store);
    const log = capture();
    const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
    const writer = createRequestLogWriter({
      store: probe.store,
      logger: log.logger,
      flushIntervalMs: 5,
      maxAttempts: 2,
      metrics: metrics.queue('request_log'),
    });
    try {
      await maxPages('current');
      // Long paths fill the free room of the last pages at once.
      const records = Array.from({ length: 80 }, (_, i) =>
        record({ accountId: token.accountId, tokenId: token.id, path: `/openai/${'x'.repeat(2000)}/${i}` }),
      );
      for (const r of records) writer.write(r);
      // Well past maxAttempts: a full disk is not a batch that can never be stored.
      await vi.waitFor(() => expect(probe.calls.insertMany.length).toBeGreaterThan(4), { timeout: 10_000 });
      expect(writer.size).toBeGreaterThan(0);
      const warned = log.entries().find((line) => line.level === 'warn');
      expect(String(warned?.reason)).toContain('disk is full');
      expect(String(warned?.reason)).not.toContain('cannot rollback');

      await maxPages(1_073_741_823);
      await writer.flush();
      expect((await stored(token.accountId)).sort()).toEqual(records.map((r) => r.requestId).sort());
      expect(await metrics.registry.metrics()).toMatch(
        /^tokenproxy_log_dropped_total\{queue="request_log",reason="store_failed"\} 0$/m,
      );
      expect(log.entries().filter((line) => line.level === 'error')).toEqual([]);
    } finally {
      await maxPages(1_073_741_823);
      await writer.close();
    }
  });
});
