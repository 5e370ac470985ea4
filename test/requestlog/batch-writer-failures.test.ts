import { describe, expect, it, vi } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import { createRequestLogWriter } from '../../src/requestlog/batch-writer.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { databases } from '../support/databases.js';
import { store, useDatabase } from '../store/store-suite.js';
import { countUsage, instrumented, stored, tokenOf } from './batch-writer-helpers.js';
import { capture, record } from './helpers.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`request-log writer on ${fixture.name}`, () => {
    useDatabase(fixture);

    it('keeps a failed batch and stores it once the database is back', async () => {
      const token = await tokenOf();
      const probe = instrumented(store);
      const log = capture();
      const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
      let down = true;
      probe.failWith(() =>
        down ? new StoreUnavailableError('SQLite database is unavailable: disk gone') : undefined,
      );
      const writer = createRequestLogWriter({
        store: probe.store,
        logger: log.logger,
        flushIntervalMs: 5,
        maxAttempts: 2,
        metrics: metrics.queue('request_log'),
      });
      const records = Array.from({ length: 3 }, () =>
        record({
          accountId: token.accountId,
          tokenId: token.id,
          forwarded: true,
          origin: 'https://secret-origin.example',
        }),
      );
      for (const r of records) writer.write(r);
      const flushed = writer.flush();
      // Unreachable is not a reason to give up, however many attempts it takes.
      await vi.waitFor(() => expect(probe.calls.insertMany.length).toBeGreaterThan(3), { timeout: 5000 });
      expect(writer.size).toBe(3);
      down = false;
      await flushed;
      expect((await stored(token.accountId)).sort()).toEqual(records.map((r) => r.requestId).sort());
      expect(await metrics.registry.metrics()).toMatch(
        /^tokenproxy_log_store_failures_total\{queue="request_log"\} [4-9]\d*$/m,
      );

      const warnings = log.entries().filter((line) => line.level === 'warn');
      expect(warnings.length).toBeGreaterThan(0);
      expect(warnings[0]).toMatchObject({ queue: 'request_log', records: 3 });
      // Counts only: no record contents in the server log.
      const text = log.lines.join('');
      for (const leaked of ['secret-origin', '203.0.113.7', token.id, records[0]?.requestId ?? '']) {
        expect(text).not.toContain(leaked);
      }
      await writer.close();
    });

    it('backs off while the database is down, however many records arrive', async () => {
      const token = await tokenOf();
      const probe = instrumented(store);
      const log = capture();
      probe.failWith(() => new StoreUnavailableError('SQLite database is unavailable: disk gone'));
      const writer = createRequestLogWriter({ store: probe.store, logger: log.logger, flushIntervalMs: 5 });
      const started = Date.now();
      while (Date.now() - started < 300) {
        writer.write(record({ accountId: token.accountId, tokenId: token.id }));
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      // 5, 10, 20, 40, 80, 160 ms: about 6 attempts in 300 ms, not one per write or per interval.
      expect(probe.calls.insertMany.length).toBeGreaterThanOrEqual(3);
      expect(probe.calls.insertMany.length).toBeLessThanOrEqual(8);
      expect(log.entries().filter((line) => line.level === 'warn').length).toBe(
        probe.calls.insertMany.length,
      );
      probe.failWith(undefined);
      await writer.close();
      expect(writer.size).toBe(0);
    });

    it('retries usage counting without storing a record twice', async () => {
      const token = await tokenOf();
      const probe = instrumented(store);
      let failures = 1;
      probe.failWith((what) =>
        what === 'recordUsage' && failures-- > 0 ? new Error('deadlock detected') : undefined,
      );
      const writer = createRequestLogWriter({
        store: probe.store,
        logger: capture().logger,
        flushIntervalMs: 5,
      });
      const records = [1, 2].map(() =>
        record({ accountId: token.accountId, tokenId: token.id, forwarded: true }),
      );
      for (const r of records) writer.write(r);
      await writer.flush();
      await countUsage(records, probe.store);
      expect(probe.calls.insertMany).toEqual([2]);
      expect(probe.calls.recordUsage).toHaveLength(2);
      expect((await stored(token.accountId)).sort()).toEqual(records.map((r) => r.requestId).sort());
      expect(await store.tokens.get(token.accountId, token.id)).toMatchObject({ requestCount: 2 });
      await writer.close();
    });

    it('gives up on a batch that keeps failing for another reason, and carries on', async () => {
      const token = await tokenOf();
      const probe = instrumented(store);
      const log = capture();
      const poison = record({ accountId: token.accountId, tokenId: token.id, path: '/poison' });
      probe.failWith(() => (probe.calls.insertMany.length <= 3 ? new Error('constraint failed') : undefined));
      const writer = createRequestLogWriter({
        store: probe.store,
        logger: log.logger,
        flushIntervalMs: 5,
        maxAttempts: 3,
      });
      writer.write(poison);
      await writer.flush();
      expect(probe.calls.insertMany).toEqual([1, 1, 1]);
      expect(log.entries().find((line) => line.level === 'error')).toMatchObject({ records: 1, attempts: 3 });
      const next = record({ accountId: token.accountId, tokenId: token.id });
      writer.write(next);
      await writer.flush();
      expect(await stored(token.accountId)).toEqual([next.requestId]);
      await writer.close();
    });

    it('counts a given-up batch under each record’s own queue: forwarded and refused apart', async () => {
      const token = await tokenOf();
      const probe = instrumented(store);
      const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
      probe.failWith(() => new Error('constraint failed'));
      const writer = createRequestLogWriter({
        store: probe.store,
        logger: capture().logger,
        flushIntervalMs: 5,
        maxAttempts: 2,
        metrics: metrics.queue('request_log'),
      });
      const of = (forwarded: boolean) => record({ accountId: token.accountId, tokenId: token.id, forwarded });
      for (const forwarded of [true, false, false, true, false]) writer.write(of(forwarded));
      writer.write(record({ accountId: null, tokenId: null, forwarded: false }));
      await writer.flush();
      const text = await metrics.registry.metrics();
      const dropped = (queue: string) =>
        new RegExp(
          `^tokenproxy_log_dropped_total\\{queue="${queue}",reason="store_failed"\\} (\\d+)$`,
          'm',
        ).exec(text)?.[1];
      expect([
        dropped('request_log'),
        dropped('request_log_refused'),
        dropped('request_log_unmatched'),
      ]).toEqual(['2', '3', '1']);
      await writer.close();
    });

    it('gives up on close after the timeout when the database does not come back', async () => {
      const token = await tokenOf();
      const probe = instrumented(store);
      const log = capture();
      probe.failWith(() => new StoreUnavailableError('PostgreSQL at postgres://db is unavailable'));
      const writer = createRequestLogWriter({
        store: probe.store,
        logger: log.logger,
        flushIntervalMs: 5,
        closeTimeoutMs: 100,
      });
      writer.write(record({ accountId: token.accountId, tokenId: token.id }));
      writer.write(record({ accountId: token.accountId, tokenId: token.id }));
      await writer.close();
      expect(log.entries().find((line) => line.level === 'error')).toMatchObject({
        queue: 'request_log',
        records: 2,
      });
    });
  });
}
