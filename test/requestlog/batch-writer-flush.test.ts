import { describe, expect, it, vi } from 'vitest';
import { createRequestLogWriter } from '../../src/requestlog/batch-writer.js';
import type { RequestLogRecord } from '../../src/requestlog/record.js';
import { databases } from '../support/databases.js';
import { store, useDatabase } from '../store/store-suite.js';
import { countUsage, instrumented, stored, tokenOf } from './batch-writer-helpers.js';
import { capture, record } from './helpers.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`request-log writer on ${fixture.name}`, () => {
    useDatabase(fixture);

    it('queues on write and stores on flush; usage counts only forwarded requests', async () => {
      const token = await tokenOf();
      const log = capture();
      const writer = createRequestLogWriter({ store, logger: log.logger, flushIntervalMs: 60_000 });
      const mine = { accountId: token.accountId, tokenId: token.id };
      const records = [
        record({ ...mine, forwarded: true, timestamp: '2026-03-10T12:00:00.001Z' }),
        record({ ...mine, forwarded: true, timestamp: '2026-03-10T12:00:00.003Z' }),
        record({
          ...mine,
          forwarded: false,
          status: 403,
          authorized: false,
          timestamp: '2026-03-10T12:00:00.004Z',
          errorCode: 'origin_not_allowed',
        }),
        record({ ...mine, forwarded: true, status: 502, timestamp: '2026-03-10T12:00:00.002Z' }),
        record({ status: 401, authorized: false }),
      ];
      for (const r of records) writer.write(r);
      expect(writer.size).toBe(5);
      expect(await stored(token.accountId)).toEqual([]);

      await writer.flush();
      expect(writer.size).toBe(0);
      await countUsage(records);
      expect((await stored(token.accountId)).sort()).toEqual(
        records
          .slice(0, 4)
          .map((r) => r.requestId)
          .sort(),
      );
      expect(await store.tokens.get(token.accountId, token.id)).toMatchObject({
        requestCount: 3,
        lastUsedAt: '2026-03-10T12:00:00.003Z',
      });
      expect(await store.accounts.usage(token.accountId, '2026-03')).toBe(3);
      const [first] = (await store.requestLogs.list(token.accountId, { authorized: false }, { limit: 1 }))
        .items;
      expect(first).toEqual({
        id: records[2]?.requestId,
        timestamp: '2026-03-10T12:00:00.004Z',
        accountId: token.accountId,
        tokenId: token.id,
        provider: 'openai',
        origin: 'https://app.example',
        ip: '203.0.113.7',
        country: 'DE',
        pop: 'fra1',
        path: '/openai/v1/chat/completions',
        status: 403,
        authorized: false,
        latencyMs: 1,
        errorCode: 'origin_not_allowed',
        model: null,
        inputTokens: null,
        outputTokens: null,
        costMicros: null,
      });
      await writer.close();
    });

    it('flushes on its own after the interval', async () => {
      const token = await tokenOf();
      const writer = createRequestLogWriter({ store, logger: capture().logger, flushIntervalMs: 20 });
      const r = record({ accountId: token.accountId, tokenId: token.id, forwarded: true });
      writer.write(r);
      await vi.waitFor(async () => expect(await stored(token.accountId)).toEqual([r.requestId]), {
        timeout: 5000,
        interval: 20,
      });
      await writer.close();
    });

    it('writes in few large batches, with one usage entry per token and month', async () => {
      const a = await tokenOf();
      const b = await tokenOf();
      const probe = instrumented(store);
      const writer = createRequestLogWriter({
        store: probe.store,
        logger: capture().logger,
        flushIntervalMs: 60_000,
        maxBatch: 500,
      });
      const records: RequestLogRecord[] = [];
      for (let i = 0; i < 1200; i++) {
        const token = i % 2 === 0 ? a : b;
        // The last 150 of each token fall into the next month.
        const timestamp = i < 900 ? '2026-03-31T23:59:59.000Z' : '2026-04-01T00:00:00.000Z';
        records.push(record({ accountId: token.accountId, tokenId: token.id, forwarded: true, timestamp }));
      }
      for (const r of records) writer.write(r);
      await writer.flush();
      await countUsage(records, probe.store);
      expect(probe.calls.insertMany).toEqual([500, 500, 200]);
      expect(probe.calls.recordUsage.map((batch) => batch.length)).toEqual([4]);
      expect(await store.tokens.get(a.accountId, a.id)).toMatchObject({
        requestCount: 600,
        lastUsedAt: '2026-04-01T00:00:00.000Z',
      });
      expect(await store.accounts.usage(a.accountId, '2026-03')).toBe(450);
      expect(await store.accounts.usage(a.accountId, '2026-04')).toBe(150);
      expect(await store.accounts.usage(b.accountId, '2026-04')).toBe(150);
      await writer.close();
    });

    it('close() stores what is queued; later writes are dropped', async () => {
      const token = await tokenOf();
      const log = capture();
      const writer = createRequestLogWriter({ store, logger: log.logger, flushIntervalMs: 60_000 });
      const before = record({ accountId: token.accountId, tokenId: token.id });
      writer.write(before);
      await writer.close();
      expect(await stored(token.accountId)).toEqual([before.requestId]);
      writer.write(record({ accountId: token.accountId, tokenId: token.id }));
      writer.write(record({ accountId: token.accountId, tokenId: token.id }));
      await writer.flush();
      await writer.close();
      expect(await stored(token.accountId)).toEqual([before.requestId]);
      expect(log.entries().filter((line) => line.level === 'warn')).toHaveLength(1);
    });
  });
}
