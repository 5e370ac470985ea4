import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import {
  createRequestLogWriter,
  createUsageWriter,
  type RequestLogWriterOptions,
} from '../../src/requestlog/batch-writer.js';
import type { RequestLogRecord } from '../../src/requestlog/record.js';
import { UsageTally } from '../../src/requestlog/usage-tally.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import type { RequestLogEntry, TokenRecord } from '../../src/store/records.js';
import type { Store, TokenUsage } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { SPEC_LOG_FIELDS, createToken, newAccount } from '../store/helpers.js';
import { capture, record } from './helpers.js';

/**
 * The real store, with its calls counted and failures switched on at will: `fail` decides per call
 * whether to throw instead of reaching the database.
 */
function instrumented(store: Store) {
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

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`request-log writer on ${fixture.name}`, () => {
    let opened: OpenedDatabase;
    let store: Store;

    beforeAll(async () => {
      opened = await fixture.create();
      store = opened.store;
    });
    afterAll(async () => {
      await opened.cleanup();
    });

    async function tokenOf(): Promise<TokenRecord> {
      const { account } = await newAccount(store);
      return createToken(store, account.id);
    }

    /** Usage as the proxy's thread counts it (usage-tally.ts) and the worker stores it. */
    async function countUsage(
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

    async function stored(accountId: string): Promise<string[]> {
      const page = await store.requestLogs.list(accountId, {}, { limit: 100 });
      return page.items.map((item) => item.id);
    }

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
        record({ accountId: token.accountId, tokenId: token.id }),
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
        record({ accountId: token.accountId, tokenId: token.id, path: `/openai/${'a'.repeat(15_000)}` }),
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

    it('prints each record as one log line: level, time, service, the record fields, msg (--log-requests)', async () => {
      const token = await tokenOf();
      const probe = instrumented(store);
      let down = true;
      probe.failWith(() => (down ? new StoreUnavailableError('down') : undefined));
      const printed: string[] = [];
      const writer = createRequestLogWriter({
        store: probe.store,
        logger: capture().logger,
        flushIntervalMs: 5,
        stdout: (line) => void printed.push(line),
      });
      const records = [
        record({ accountId: token.accountId, tokenId: token.id, forwarded: true, latencyMs: 0.6 }),
        record({ status: 401, authorized: false, origin: null, country: null, errorCode: 'invalid_token' }),
      ];
      for (const r of records) writer.write(r);
      // Lines do not wait for the database.
      await vi.waitFor(() => expect(printed).toHaveLength(2), { timeout: 5000 });
      down = false;
      await writer.flush();
      expect(printed.every((line) => line.endsWith('\n') && !line.slice(0, -1).includes('\n'))).toBe(true);
      const parsed = printed.map((line) => JSON.parse(line) as Record<string, unknown>);
      // The shape of every other log line: a capture of the server's own logger shows the same keys.
      const other = capture();
      other.logger.info({ request_id: 'x' }, 'request');
      const reference = other.entries()[0] as Record<string, unknown>;
      for (const line of parsed) {
        expect(Object.keys(line).slice(0, 3)).toEqual(Object.keys(reference).slice(0, 3));
        expect(Object.keys(line).at(-1)).toBe('msg');
        expect(Object.keys(line).sort()).toEqual(
          [
            ...SPEC_LOG_FIELDS,
            'request_id',
            'error_code',
            'model',
            'input_tokens',
            'output_tokens',
            'cost_micros',
            'level',
            'time',
            'service',
            'msg',
          ].sort(),
        );
        expect(Date.parse(line.time as string)).not.toBeNaN();
      }
      expect(parsed).toEqual([
        {
          level: 'info',
          time: expect.any(String) as string,
          service: 'tokenproxy',
          msg: 'request',
          error_code: null,
          request_id: records[0]?.requestId,
          timestamp: '2026-03-10T12:00:00.000Z',
          token_id: token.id,
          origin: 'https://app.example',
          ip: '203.0.113.7',
          country: 'DE',
          pop: 'fra1',
          path: '/openai/v1/chat/completions',
          status: 200,
          authorized: true,
          latency_ms: 1,
          model: null,
          input_tokens: null,
          output_tokens: null,
          cost_micros: null,
        },
        {
          request_id: records[1]?.requestId,
          timestamp: '2026-03-10T12:00:00.000Z',
          token_id: null,
          origin: null,
          ip: '203.0.113.7',
          country: null,
          pop: 'fra1',
          path: '/openai/v1/chat/completions',
          status: 401,
          authorized: false,
          latency_ms: 1,
          model: null,
          input_tokens: null,
          output_tokens: null,
          cost_micros: null,
          level: 'info',
          time: expect.any(String) as string,
          service: 'tokenproxy',
          msg: 'request',
          error_code: 'invalid_token',
        },
      ]);
      expect(printed).toHaveLength(2);
      await writer.close();
    });
  });
}
