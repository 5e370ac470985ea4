import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../src/server/start.js';
import { openStore } from '../../src/store/open.js';
import { mockProviderConfig } from '../support/server-config.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { newAccount, rawQuery } from '../store/helpers.js';

/**
 * Issue 18: a purge of 1,000,000 request-log rows, in batches on the retention thread, while
 * requests flow through the proxy of the same server (SQLite: one writer at a time, the hardest case).
 * Every request must succeed and be logged; every old row must go; the freed pages go back to the disk.
 */

const ROWS = 1_000_000;
const REAL_KEY = `sk-retention-${Date.now()}-real-key`;

function sqlite(dataDir: string): SqliteDatabase.Database {
  return new SqliteDatabase(path.join(dataDir, 'tokenproxy.db'), { timeout: 5000 });
}

describe('retention: 1,000,000 rows purged while requests flow (SQLite)', () => {
  let mock: MockProvider;
  let dataDir: string;
  let server: RunningServer | undefined;
  let dispatcher: Agent;
  let apiKey = '';
  let accountId = '';
  const logLines: string[] = [];

  beforeAll(async () => {
    mock = await startMockProvider();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-retention-'));
    // The account and its history exist before the server starts (so it creates no default account).
    const store = await openStore({ database: undefined, dataDir });
    const created = await newAccount(store, 'unlimited');
    await store.close();
    apiKey = created.apiKey;
    accountId = created.account.id;
    const db = sqlite(dataDir);
    try {
      // Generated inside SQLite (a recursive CTE): a million rows in seconds, 100 days old and older.
      db.prepare(
        `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
         insert into request_logs (id, account_id, token_id, provider, timestamp, origin, ip, country, pop, path, status, authorized, latency_ms, error_code)
         select printf('req_old%09d', i), ?, null, 'openai',
                strftime('%Y-%m-%dT%H:%M:%fZ', '2020-01-01', '+' || (i / 10) || ' seconds'),
                'https://app.example', '203.0.113.7', null, 'test', '/openai/v1/models', 200, 1, 3, null
         from n`,
      ).run(ROWS, accountId);
      expect(db.pragma('auto_vacuum', { simple: true })).toBe(2);
    } finally {
      db.close();
    }

    const config = await mockProviderConfig(dataDir, mock);
    server = await startServer(config, {
      env: {},
      logger: createLogger('info', { write: (line: string) => void logLines.push(line) }),
      print: () => undefined,
    });
    dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  }, 180_000);

  afterAll(async () => {
    await server?.close();
    await mock?.close();
    await dispatcher?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('deletes every old row in batches, serves and logs every request meanwhile, and returns the space', async () => {
    const running = server as RunningServer;
    const created = await request(`${running.apiUrl}/v1/tokens`, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'load',
        provider: 'openai',
        real_key: REAL_KEY,
        allowed_hosts: ['app.example.com'],
      }),
    });
    expect(created.statusCode).toBe(201);
    const token = ((await created.body.json()) as { sanitized_key: string }).sanitized_key;

    const account = await request(`${running.apiUrl}/v1/account`, {
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(((await account.body.json()) as { retention: unknown }).retention).toEqual({
      logs: '30d',
      rollups: '400d',
    });

    let purging = true;
    const statuses: number[] = [];
    const traffic = (async () => {
      while (purging) {
        const res = await request(`${running.proxyUrl}/openai/v1/models`, {
          dispatcher,
          headers: { authorization: `Bearer ${token}`, origin: 'https://app.example.com' },
        });
        await res.body.text();
        statuses.push(res.statusCode);
      }
    })();
    const report = await running.retention.runNow().finally(() => (purging = false));
    await traffic;

    expect(report).toMatchObject({ requestLogs: ROWS, anomalies: 0, events: 0 });
    expect(report?.space.kind).toBe('reclaimed');
    if (report?.space.kind === 'reclaimed') expect(report.space.pages).toBeGreaterThan(1000);
    // Requests were served during the purge, every one of them.
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 200)).toBe(true);

    const db = sqlite(dataDir);
    try {
      const old = db.prepare(`select count(*) as n from request_logs where id like 'req_old%'`).get() as {
        n: number;
      };
      expect(old.n).toBe(0);
      // The requests made meanwhile are logged (the log thread writes between the purge's batches).
      let logged = 0;
      for (let i = 0; i < 100 && logged < statuses.length; i += 1) {
        logged = (
          db.prepare(`select count(*) as n from request_logs where id not like 'req_old%'`).get() as {
            n: number;
          }
        ).n;
        if (logged < statuses.length) await new Promise((r) => setTimeout(r, 100));
      }
      expect(logged).toBe(statuses.length);
    } finally {
      db.close();
    }
    expect(logLines.some((line) => line.includes('retention: old history deleted'))).toBe(true);
  }, 300_000);
});

const PG_ROWS = 50_000;
const postgres = databases.find((d) => d.name === 'postgres');

describe.skipIf(postgres?.available !== true)(
  `retention: ${PG_ROWS} rows purged while requests flow (PostgreSQL)`,
  () => {
    let mock: MockProvider;
    let opened: OpenedDatabase;
    let server: RunningServer | undefined;
    let dispatcher: Agent;
    let apiKey = '';

    beforeAll(async () => {
      mock = await startMockProvider();
      opened = await (postgres as NonNullable<typeof postgres>).create();
      const created = await newAccount(opened.store, 'unlimited');
      apiKey = created.apiKey;
      await rawQuery(
        'postgres',
        opened,
        `insert into request_logs (id, account_id, token_id, provider, timestamp, origin, ip, country, pop, path, status, authorized, latency_ms, error_code)
         select 'req_old' || lpad(i::text, 9, '0'), ?, null, 'openai',
                to_char(timestamp '2020-01-01' + i * interval '100 milliseconds', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'https://app.example', '203.0.113.7', null, 'test', '/openai/v1/models', 200, 1, 3, null
         from generate_series(1, ${PG_ROWS}) as i`,
        [created.account.id],
      );
      const config = await mockProviderConfig(opened.dataDir, mock, {
        env: { TOKENPROXY_DATABASE: opened.database },
      });
      server = await startServer(config, { env: {}, logger: createLogger('silent'), print: () => undefined });
      dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
    }, 180_000);

    afterAll(async () => {
      await server?.close();
      await mock?.close();
      await dispatcher?.close();
      await opened?.cleanup();
    });

    it('deletes every old row while every request is served and logged', async () => {
      const running = server as RunningServer;
      const created = await request(`${running.apiUrl}/v1/tokens`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'load',
          provider: 'openai',
          real_key: REAL_KEY,
          allowed_hosts: ['app.example.com'],
        }),
      });
      expect(created.statusCode).toBe(201);
      const token = ((await created.body.json()) as { sanitized_key: string }).sanitized_key;
      let purging = true;
      const statuses: number[] = [];
      const traffic = (async () => {
        while (purging) {
          const res = await request(`${running.proxyUrl}/openai/v1/models`, {
            dispatcher,
            headers: { authorization: `Bearer ${token}`, origin: 'https://app.example.com' },
          });
          await res.body.text();
          statuses.push(res.statusCode);
        }
      })();
      const report = await running.retention.runNow().finally(() => (purging = false));
      await traffic;
      expect(report).toMatchObject({ requestLogs: PG_ROWS, space: { kind: 'not_needed' } });
      expect(statuses.length).toBeGreaterThan(0);
      expect(statuses.every((s) => s === 200)).toBe(true);
      const old = await rawQuery(
        'postgres',
        opened,
        `select count(*)::int as n from request_logs where id like 'req_old%'`,
      );
      expect(old[0]?.n).toBe(0);
      await expect
        .poll(
          async () =>
            (
              await rawQuery(
                'postgres',
                opened,
                `select count(*)::int as n from request_logs where id not like 'req_old%'`,
              )
            )[0]?.n,
          { timeout: 10_000 },
        )
        .toBe(statuses.length);
    }, 300_000);
  },
);
