import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import { createRequestLogWriter } from '../../src/requestlog/batch-writer.js';
import { databases } from '../support/databases.js';
import { store, useDatabase } from '../store/store-suite.js';
import { stored, tokenOf } from './batch-writer-helpers.js';
import { capture, record } from './helpers.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`request-log writer on ${fixture.name}`, () => {
    useDatabase(fixture);

    it('drops the oldest records beyond the queue bound, and says so', async () => {
      const token = await tokenOf();
      const log = capture();
      const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
      const writer = createRequestLogWriter({
        store,
        logger: log.logger,
        flushIntervalMs: 60_000,
        maxQueue: 5,
        metrics: metrics.queue('request_log'),
      });
      const records = Array.from({ length: 8 }, () =>
        record({ accountId: token.accountId, tokenId: token.id, forwarded: true }),
      );
      for (const r of records) writer.write(r);
      expect(writer.size).toBe(5);
      expect(await metrics.registry.metrics()).toMatch(
        /^tokenproxy_log_queue_depth\{queue="request_log"\} 5$/m,
      );
      await writer.flush();
      expect((await stored(token.accountId)).sort()).toEqual(
        records
          .slice(3)
          .map((r) => r.requestId)
          .sort(),
      );
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/^tokenproxy_log_dropped_total\{queue="request_log",reason="queue_full"\} 3$/m);
      expect(text).toMatch(/^tokenproxy_log_queue_depth\{queue="request_log"\} 0$/m);
      const warning = log.entries().find((line) => line.dropped === 3);
      expect(warning).toMatchObject({ level: 'warn', queue: 'request_log' });
      await writer.close();
    });

    it('drops the oldest records beyond the byte bound, however few they are', async () => {
      const token = await tokenOf();
      const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
      const writer = createRequestLogWriter({
        store,
        logger: capture().logger,
        flushIntervalMs: 60_000,
        maxBytes: 50_000,
        metrics: metrics.queue('request_log'),
      });
      // 15 kB paths: three fit in 50 kB, far below any count bound.
      const records = Array.from({ length: 8 }, () =>
        record({
          accountId: token.accountId,
          tokenId: token.id,
          forwarded: true,
          path: `/openai/${'a'.repeat(15_000)}`,
        }),
      );
      for (const r of records) writer.write(r);
      expect(writer.size).toBe(3);
      await writer.flush();
      expect((await stored(token.accountId)).sort()).toEqual(
        records
          .slice(5)
          .map((r) => r.requestId)
          .sort(),
      );
      expect(await metrics.registry.metrics()).toMatch(
        /^tokenproxy_log_dropped_total\{queue="request_log",reason="queue_full"\} 5$/m,
      );
      await writer.close();
    });
  });
}
