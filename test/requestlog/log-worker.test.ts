import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { packRequest, unpackRequests, type PackedValue } from '../../src/requestlog/log-protocol.js';
import { LOG_WORKER_IDLE_RULE } from '../../src/requestlog/log-budgets.js';
import { startLogWorker } from '../../src/requestlog/log-worker.js';
import { timestampPosition } from '../../src/store/records.js';
import type { Store } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { until } from '../support/poll.js';
import { allPages, anomalyEntry, createToken, newAccount } from '../store/helpers.js';
import { capture, record } from './helpers.js';

/** The worker thread stores what the proxy's thread hands it, through a store connection of its own. */

describe('packed request records', () => {
  it('unpack to the records that were packed, nulls and booleans included, in order', () => {
    const records = [
      record({ accountId: null, tokenId: null, provider: null, origin: null, country: null }),
      record({
        status: 403,
        authorized: false,
        forwarded: false,
        latencyMs: 0,
        errorCode: 'origin_not_allowed',
      }),
      record({ status: 200, authorized: true, forwarded: true, country: 'BR', origin: 'https://a.example' }),
    ];
    const packed: PackedValue[] = [];
    for (const r of records) packRequest(packed, r);
    expect(packed.every((v) => v === null || typeof v !== 'object')).toBe(true);
    expect(unpackRequests(structuredClone(packed))).toEqual(records);
  });
});

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`log worker on ${fixture.name}`, () => {
    let opened: OpenedDatabase;
    let store: Store;

    beforeAll(async () => {
      opened = await fixture.create();
      store = opened.store;
    });
    afterAll(async () => {
      await opened.cleanup();
    });

    it('stores request records, usage and anomaly entries from another thread; flush waits for them', async () => {
      const { account } = await newAccount(store);
      const token = await createToken(store, account.id);
      const worker = startLogWorker({
        database: opened.database,
        dataDir: opened.dataDir,
        logger: createLogger('silent'),
      });
      const records = Array.from({ length: 1200 }, (_, i) =>
        record({
          accountId: account.id,
          tokenId: token.id,
          forwarded: i % 2 === 0,
          errorCode: i % 2 === 0 ? null : 'rate_limited',
        }),
      );
      for (const r of records) worker.requestLog.write(r);
      const anomaly = anomalyEntry(account.id, token.id, { kind: 'rate_spike', details: { rate: 12.5 } });
      worker.anomalies.write(anomaly);
      worker.anomalies.onUnauthorized({
        requestId: 'req_workerbreach00000000',
        timestamp: '2026-03-10T12:00:01.000Z',
        accountId: account.id,
        tokenId: token.id,
        origin: 'https://evil.example',
        ip: '198.51.100.9',
        country: null,
        path: '/openai/v1/models',
        reason: 'origin_not_allowed',
      });
      expect(worker.requestLog.size).toBe(1200);

      await worker.flush();
      expect(worker.requestLog.size).toBe(0);
      const { items: stored } = await allPages(
        (page) => store.requestLogs.list(account.id, {}, page),
        100,
        timestampPosition,
      );
      expect(stored.map((e) => e.id).sort()).toEqual(records.map((r) => r.requestId).sort());
      // error_code crosses the thread and reaches the store.
      const codeOf = new Map(stored.map((e) => [e.id, e.errorCode]));
      expect(records.every((r) => codeOf.get(r.requestId) === r.errorCode)).toBe(true);
      expect(await store.tokens.get(account.id, token.id)).toMatchObject({ requestCount: 600 });
      const anomalies = (await store.anomalies.list(account.id, {}, { limit: 10 })).items;
      expect(anomalies.map((a) => [a.kind, a.details])).toEqual(
        expect.arrayContaining([
          ['rate_spike', { rate: 12.5 }],
          ['breach', null],
        ]),
      );
      await worker.close();
    });

    // One dialect is enough: when the worker gives memory back does not depend on where it stores.
    it.runIf(fixture.name === 'sqlite')(
      'gives its memory back seconds after its start-up and after a busy spell, not during one and not after a few records',
      async () => {
        const { account } = await newAccount(store);
        const token = await createToken(store, account.id);
        const { logger, entries } = capture();
        const reductions = () =>
          entries().filter(
            (e) => e.msg === 'returned memory after a busy spell' && e.thread === 'log worker',
          );
        const worker = startLogWorker({ database: opened.database, dataDir: opened.dataDir, logger });
        const write = (n: number) => {
          for (let i = 0; i < n; i++)
            worker.requestLog.write(record({ accountId: account.id, tokenId: token.id, forwarded: true }));
        };
        // Waits for the n-th reduction (at most 15 s): they come seconds after a quiet spell begins.
        const reductionNumber = async (n: number) => {
          await until(`reduction ${n}`, () => reductions().length >= n, { timeoutMs: 15_000, everyMs: 100 });
          expect(reductions()).toHaveLength(n);
        };
        try {
          // The start-up counts as a spell: a worker that gets no records gives it back once.
          await reductionNumber(1);
          // A trickle, then a pause: too little work to have anything to give back.
          write(LOG_WORKER_IDLE_RULE.minWork / 10);
          await worker.flush();
          await sleep(LOG_WORKER_IDLE_RULE.quietMs + 1_000);
          expect(reductions()).toHaveLength(1);
          // A spell, then a record every 100 ms: never quiet, so nothing yet.
          write(LOG_WORKER_IDLE_RULE.minWork);
          await worker.flush();
          for (let i = 0; i < (LOG_WORKER_IDLE_RULE.quietMs + 1_000) / 100; i++) {
            write(1);
            await sleep(100);
          }
          expect(reductions()).toHaveLength(1);
          // Quiet: the spell's reduction.
          await reductionNumber(2);
          expect(reductions()[1]).toMatchObject({
            level: 'debug',
            rss_mb_before: expect.any(Number) as number,
            rss_mb_after: expect.any(Number) as number,
            pause_ms: expect.any(Number) as number,
          });
        } finally {
          await worker.close();
        }
      },
      60_000,
    );

    it('keeps storing while this thread writes to the same database, and close stores the rest', async () => {
      const { account } = await newAccount(store);
      const token = await createToken(store, account.id);
      const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
      const worker = startLogWorker({
        database: opened.database,
        dataDir: opened.dataDir,
        logger: createLogger('silent'),
        metrics,
        flushIntervalMs: 5,
      });
      const ids: string[] = [];
      for (let round = 0; round < 20; round += 1) {
        for (let i = 0; i < 50; i += 1) {
          const r = record({ accountId: account.id, tokenId: token.id, forwarded: true });
          ids.push(r.requestId);
          worker.requestLog.write(r);
        }
        // Writes of this thread's own connection interleave with the worker's batches.
        await createToken(store, account.id);
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
      await worker.close();
      const { items: stored } = await allPages(
        (page) => store.requestLogs.list(account.id, {}, page),
        100,
        timestampPosition,
      );
      expect(stored.length).toBe(ids.length);
      expect(await store.tokens.get(account.id, token.id)).toMatchObject({ requestCount: 1000 });
      // Everything was stored: none of it is counted as dropped.
      expect(await metrics.registry.metrics()).toMatch(
        /tokenproxy_log_dropped_total\{queue="request_log",reason="queue_full"\} 0\n/,
      );
      // After close nothing is taken any more, and flush does not hang.
      worker.requestLog.write(record({ accountId: account.id, tokenId: token.id }));
      await worker.flush();
    });
  });
}

describe('log worker against a database that is down', () => {
  it('logs the store failure through this thread’s logger, counts it, and keeps the records queued', async () => {
    const { logger, entries } = capture();
    const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
    const worker = startLogWorker({
      // Nothing listens on port 9 of loopback: connections are refused at once.
      database: 'postgres://postgres@127.0.0.1:9/none',
      dataDir: '/nonexistent',
      logger,
      metrics,
      flushIntervalMs: 10,
    });
    // A record of a known token: it is kept (and counted as waiting) until stored.
    worker.requestLog.write(record({ accountId: 'acc_down', tokenId: 'tok_down' }));
    const deadline = Date.now() + 10_000;
    while (
      !entries().some((e) => e.level === 'warn' && String(e.msg).includes('request_log')) &&
      Date.now() < deadline
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
    const warning = entries().find((e) => e.level === 'warn' && String(e.msg).includes('request_log'));
    expect(warning).toBeDefined();
    expect(warning?.service).toBe('tokenproxy');
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/tokenproxy_log_store_failures_total\{queue="request_log"\} [1-9]/);
    expect(worker.requestLog.size).toBe(1);
    await worker.close();
  });
});

/** Sums tokenproxy_log_dropped_total for a queue (and a reason, when given) from /metrics text. */
async function droppedOf(
  metrics: ReturnType<typeof createMetrics>,
  queue: string,
  reason?: string,
): Promise<number> {
  let total = 0;
  for (const [, q, r, n] of (await metrics.registry.metrics()).matchAll(
    /^tokenproxy_log_dropped_total\{queue="([a-z_]+)",reason="([a-z_]+)"\} (\d+)$/gm,
  ))
    if (q === queue && (reason === undefined || r === reason)) total += Number(n);
  return total;
}

describe('log worker that dies', () => {
  it('loses no usage, record of a known token or anomaly entry: they go to the next worker', async () => {
    const sqlite = databases.find((fixture) => fixture.name === 'sqlite');
    if (sqlite === undefined) throw new Error('no SQLite fixture');
    const opened = await sqlite.create();
    try {
      const { account } = await newAccount(opened.store);
      const token = await createToken(opened.store, account.id);
      const { logger, entries } = capture();
      const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
      const worker = startLogWorker({
        database: opened.database,
        dataDir: opened.dataDir,
        logger,
        metrics,
        // Nothing is stored on the worker's own schedule: everything written before the crash is
        // still in its hands (or on the way) when it dies.
        flushIntervalMs: 60_000,
      });
      const keyed: string[] = [];
      const anomalyIds: string[] = [];
      let unmatched = 0;
      const writeRound = (round: number): void => {
        for (let i = 0; i < 100; i += 1) {
          const r = record({ accountId: account.id, tokenId: token.id, forwarded: i % 4 !== 0 });
          keyed.push(r.requestId);
          worker.requestLog.write(r);
          worker.requestLog.write(record({ accountId: null, tokenId: null, status: 401, authorized: false }));
          unmatched += 1;
        }
        const entry = anomalyEntry(account.id, token.id, {
          id: `anm_crash${String(round).padStart(16, '0')}`,
        });
        anomalyIds.push(entry.id);
        worker.anomalies.write(entry);
      };
      for (let round = 0; round < 5; round += 1) {
        writeRound(round);
        // The post interval passes: the round is handed to the worker.
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      await worker.crash();
      // Written while no worker runs (it starts again after 1 s).
      for (let round = 5; round < 8; round += 1) writeRound(round);
      await worker.flush();

      expect(entries().some((e) => String(e.msg).startsWith('log worker stopped'))).toBe(true);
      const { items: stored } = await allPages(
        (page) => opened.store.requestLogs.list(account.id, {}, page),
        100,
        timestampPosition,
      );
      expect(stored.map((e) => e.id).sort()).toEqual([...keyed].sort());
      // 75 of every 100 were forwarded, before and after the crash: each counted exactly once.
      expect(await opened.store.tokens.get(account.id, token.id)).toMatchObject({ requestCount: 600 });
      expect(await opened.store.accounts.usage(account.id, '2026-03')).toBe(600);
      const anomalies = await allPages(
        (page) => opened.store.anomalies.list(account.id, {}, page),
        100,
        timestampPosition,
      );
      expect(anomalies.items.map((a) => a.id).sort()).toEqual([...anomalyIds].sort());
      // Records where no token matched are not kept: those the dead worker held are lost, and
      // counted; the rest were stored.
      const lost = await droppedOf(metrics, 'request_log_unmatched', 'worker_lost');
      expect(lost).toBe(500);
      expect(await droppedOf(metrics, 'request_log')).toBe(0);
      expect(await droppedOf(metrics, 'anomaly_log')).toBe(0);
      const warning = entries().find((e) => e.msg === 'log queues dropped records');
      expect(warning?.dropped).toEqual([
        { queue: 'request_log_unmatched', reason: 'worker_lost', count: 500 },
      ]);
      expect(unmatched - lost).toBe(300);
      await worker.close();
    } finally {
      await opened.cleanup();
    }
  }, 60_000);

  it('is not killed by a flood of large records: they are bounded by bytes and dropped, counted', async () => {
    const sqlite = databases.find((fixture) => fixture.name === 'sqlite');
    if (sqlite === undefined) throw new Error('no SQLite fixture');
    const opened = await sqlite.create();
    try {
      const { account } = await newAccount(opened.store);
      const token = await createToken(opened.store, account.id);
      const { logger, entries } = capture();
      const metrics = createMetrics({ providers: ['openai'], defaultMetrics: false });
      const worker = startLogWorker({
        database: opened.database,
        dataDir: opened.dataDir,
        logger,
        metrics,
        // Nothing is stored for a minute: without byte bounds the flood below (45 MB of paths)
        // fills this small heap and kills the worker with everything it holds.
        flushIntervalMs: 60_000,
        resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 2 },
        budgets: { keyedBytes: 2 * 1024 * 1024, unmatchedBytes: 1024 * 1024, anomalyBytes: 1024 * 1024 },
      });
      const junkPath = `/mock/v1/${'a'.repeat(15_000)}`;
      const keyed: string[] = [];
      for (let round = 0; round < 30; round += 1) {
        for (let i = 0; i < 100; i += 1)
          worker.requestLog.write(
            record({ accountId: null, tokenId: null, status: 401, authorized: false, path: junkPath }),
          );
        const r = record({ accountId: account.id, tokenId: token.id, forwarded: true });
        keyed.push(r.requestId);
        worker.requestLog.write(r);
        worker.anomalies.write(anomalyEntry(account.id, token.id, { path: junkPath.slice(0, 2048) }));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await worker.flush();
      expect(entries().some((e) => String(e.msg).startsWith('log worker stopped'))).toBe(false);
      const stored = await opened.store.requestLogs.list(account.id, {}, { limit: 100 });
      expect(stored.items.map((e) => e.id).sort()).toEqual([...keyed].sort());
      expect(await opened.store.tokens.get(account.id, token.id)).toMatchObject({ requestCount: 30 });
      expect((await opened.store.anomalies.list(account.id, {}, { limit: 100 })).items).toHaveLength(30);
      const dropped = await droppedOf(metrics, 'request_log_unmatched', 'queue_full');
      // About 1 MB of 15 kB records fit in the budget: most of the 3,000 were dropped, and counted.
      expect(dropped).toBeGreaterThan(2500);
      expect(await droppedOf(metrics, 'request_log')).toBe(0);
      expect(await droppedOf(metrics, 'anomaly_log')).toBe(0);
      const warnings = entries().filter((e) => e.msg === 'log queues dropped records');
      // Rate-limited: one line (the first drop) within the 10 s interval, not one per drop.
      expect(warnings).toHaveLength(1);
      await worker.close();
    } finally {
      await opened.cleanup();
    }
  }, 60_000);
});
