/**
 * `npm run bench:usage [-- --rows N] [-- --database postgres://…]`
 *
 * Shows that the dashboard's Overview (GET /v1/usage) does not depend on the size of the request
 * log: it fills a fresh store with N (default 1,000,000) request-log records through the real log
 * writer (which keeps the per-hour rollups as it stores them), then times GET /v1/usage through the
 * management API (Fastify inject, no network) and fails unless the p99 is under 100 ms. A script,
 * not a test: timings belong here, never in `npm test`. See docs/performance.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql, type Kysely } from 'kysely';
import { createAccount } from '../src/accounts/create-account.js';
import { PLANS } from '../src/accounts/plans.js';
import { buildApiApp } from '../src/api/app.js';
import { newRequestId, newTokenId } from '../src/ids/formats.js';
import { createLogger } from '../src/observability/logger.js';
import { ProviderRegistry } from '../src/providers/providers.js';
import { createRequestLogWriter } from '../src/requestlog/batch-writer.js';
import type { RequestLogRecord } from '../src/requestlog/record.js';
import { openStore } from '../src/store/open.js';
import type { Database } from '../src/store/schema.js';
import { createLocalVault } from '../src/vault/local-kek.js';
import { round, summarize } from './stats.js';

const LIMIT_MS = 100;

function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
}

async function main(): Promise<void> {
  const rows = Number(option('rows') ?? 1_000_000);
  const database = option('database');
  const dataDir = await mkdtemp(join(tmpdir(), 'tokenproxy-bench-usage-'));
  const store = await openStore({ database, dataDir });
  const logger = createLogger('silent');
  try {
    const now = new Date();
    const { account, apiKey } = await createAccount(store, 'bench', 'unlimited', now);
    const tokenId = newTokenId();

    // Records spread evenly over the last 7 days, one in five refused, written as the proxy's log
    // worker writes them: batches through the batch writer, which also keeps the rollups.
    const started = performance.now();
    const writer = createRequestLogWriter({ store, logger, flushIntervalMs: 50, maxBatch: 2000 });
    const spanMs = 7 * 24 * 3600 * 1000;
    for (let i = 0; i < rows; i++) {
      const at = now.getTime() - spanMs + Math.floor((i / rows) * spanMs);
      const refused = i % 5 === 0;
      const record: RequestLogRecord = {
        requestId: newRequestId(at),
        timestamp: new Date(at).toISOString(),
        accountId: account.id,
        tokenId,
        provider: 'openai',
        origin: 'https://app.example.com',
        ip: `10.0.${(i >> 8) & 255}.${i & 255}`,
        country: null,
        pop: 'bench',
        path: '/openai/v1/chat/completions',
        status: refused ? 403 : 200,
        authorized: !refused,
        latencyMs: 1,
        forwarded: !refused,
        errorCode: refused ? 'origin_not_allowed' : null,
        model: null,
        inputTokens: null,
        outputTokens: null,
        costMicros: null,
      };
      writer.write(record);
      if (i % 20_000 === 19_999) await writer.flush();
    }
    await writer.close();
    // The store keeps its Kysely instance private; a bench may look inside to count the rows.
    const db = (store as unknown as { db: Kysely<Database> }).db;
    const counted = await sql<{ n: number | string }>`select count(*) as n from request_logs`.execute(db);
    const stored = Number(counted.rows[0]?.n ?? 0);
    if (stored < rows) throw new Error(`only ${stored} of ${rows} records were stored`);
    console.log(
      `stored ${stored.toLocaleString('en-US')} request-log records in ${round((performance.now() - started) / 1000, 1)} s (${store.dialect})`,
    );

    const app = await buildApiApp(
      {
        store,
        vault: createLocalVault(randomBytes(32)),
        providers: new ProviderRegistry([]),
        publicProxyUrl: 'https://proxy.bench',
        plans: PLANS,
        now: () => new Date(),
      },
      { logger, version: 'bench' },
    );
    await app.ready();
    const times: number[] = [];
    let body = '';
    for (let i = 0; i < 220; i++) {
      const t0 = performance.now();
      const res = await app.inject({
        method: 'GET',
        url: '/v1/usage?window=24h&bucket=1h',
        headers: { authorization: `Bearer ${apiKey}` },
      });
      const ms = performance.now() - t0;
      if (res.statusCode !== 200) throw new Error(`GET /v1/usage answered ${res.statusCode}: ${res.body}`);
      if (i >= 20) times.push(ms); // the first calls warm up the JIT and the statement cache
      body = res.body;
    }
    await app.close();
    const usage = JSON.parse(body) as { forwarded: number; refused: number };
    const s = summarize(times);
    console.log(
      `GET /v1/usage (24 h, 1 h buckets): forwarded ${usage.forwarded}, refused ${usage.refused}; ` +
        `p50 ${round(s.p50, 2)} ms, p99 ${round(s.p99, 2)} ms, max ${round(s.max, 2)} ms over ${s.count} calls`,
    );
    if (!(s.p99 < LIMIT_MS)) {
      console.error(`FAIL: p99 ${round(s.p99, 2)} ms is not under ${LIMIT_MS} ms`);
      process.exitCode = 1;
    } else {
      console.log(`OK: p99 under ${LIMIT_MS} ms with ${stored.toLocaleString('en-US')} request-log records`);
    }
  } finally {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
