import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { startServer, type RunningServer, type StartOptions } from '../../src/server/start.js';
import { createAccount } from '../../src/accounts/create-account.js';
import { openStore } from '../../src/store/open.js';
import { timestampPosition } from '../../src/store/records.js';
import { mockProviderConfig } from '../support/server-config.js';
import { startMockProvider } from '../support/mock-provider.js';
import { allPages } from '../store/helpers.js';

/**
 * The flood of issue 13, scaled down to a few seconds on 2 cores: tokenless requests with 15 kB
 * paths at line rate (h2load, another process) while a token is used N times from its own origin
 * and N times from another. Every use of the token must be counted, logged and (for the refused
 * ones) in the anomaly log; the junk is stored as far as its budget allows and the rest counted.
 */

const REAL_KEY = `sk-flood-${Date.now()}-real-key`;
const N = 30;
const JUNK = 3000;
const JUNK_PATH = `/openai/v1/${'a'.repeat(15_000)}`;

function h2load(
  url: string,
  requests: number,
  options: readonly string[] = ['--h1', '-c', '32', '-m', '1'],
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('h2load', [...options, '-n', String(requests), url]);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

/**
 * A real server on a fresh SQLite data dir with a mock provider, its log lines kept, and its first
 * account's API key; closed with everything it started.
 */
async function startFloodServer(prefix: string, logBudgets?: StartOptions['logBudgets']) {
  const logLines: string[] = [];
  const mock = await startMockProvider();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const printed: string[] = [];
  const server = await startServer(await mockProviderConfig(dataDir, mock), {
    env: {},
    logger: createLogger('info', { write: (line: string) => void logLines.push(line) }),
    print: (line) => printed.push(line),
    logBudgets,
  });
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  return {
    server,
    dataDir,
    dispatcher,
    logLines,
    apiKey: /svc_sk_\w+/.exec(printed.join('\n'))?.[0] ?? '',
    async close(): Promise<void> {
      await server.close();
      await mock.close();
      await dispatcher.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

describe('a flood of tokenless requests with large paths', () => {
  let flood: Awaited<ReturnType<typeof startFloodServer>> | undefined;
  let dataDir: string;
  let server: RunningServer | undefined;
  let dispatcher: Agent;
  let logLines: string[] = [];

  beforeAll(async () => {
    flood = await startFloodServer('tokenproxy-flood-');
    ({ server, dataDir, dispatcher, logLines } = flood);
    process.env.FLOOD_API_KEY = flood.apiKey;
  });

  afterAll(async () => {
    await flood?.close();
  });

  it('loses no use of a real token: request_count, rows and anomalies are all there, junk losses counted', async () => {
    const running = server as RunningServer;
    const apiKey = process.env.FLOOD_API_KEY ?? '';
    const created = await request(`${running.apiUrl}/v1/tokens`, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'flood',
        provider: 'openai',
        real_key: REAL_KEY,
        allowed_hosts: ['app.example.com'],
      }),
    });
    expect(created.statusCode).toBe(201);
    const body = (await created.body.json()) as { sanitized_key: string; token_id: string };
    const token = body.sanitized_key;

    const use = async (origin: string): Promise<number> => {
      const res = await request(`${running.proxyUrl}/openai/v1/models`, {
        dispatcher,
        headers: { authorization: `Bearer ${token}`, origin },
      });
      await res.body.text();
      return res.statusCode;
    };
    const flood = h2load(`${running.proxyUrl}${JUNK_PATH}`, JUNK);
    const statuses: number[] = [];
    for (let i = 0; i < N; i += 1) {
      statuses.push(await use('https://app.example.com'));
      statuses.push(await use('https://evil.example'));
    }
    const report = await flood;
    expect(report).toMatch(new RegExp(`requests: ${JUNK} total, ${JUNK} started, ${JUNK} done`));
    expect(statuses.filter((s) => s === 200)).toHaveLength(N);
    // Refused: 403, or 429 once the flood (refusals from the same IP) has put loopback in backoff;
    // both are logged and in the anomaly log (DESIGN §10).
    expect(statuses.filter((s) => s === 403 || s === 429)).toHaveLength(N);

    // Every record is handed to the log (the request metric is counted right after it).
    const metricsText = async (): Promise<string> => {
      const res = await request(`${running.apiUrl}/metrics`, { dispatcher });
      return res.body.text();
    };
    // Every request, the flood's included, with any status.
    const counted = (text: string): number => {
      let total = 0;
      for (const [, n] of text.matchAll(/^tokenproxy_proxy_requests_total\{[^}]*\} (\d+)$/gm))
        total += Number(n);
      return total;
    };
    let text = await metricsText();
    for (let i = 0; i < 100 && counted(text) < JUNK + 2 * N; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      text = await metricsText();
    }
    expect(counted(text)).toBe(JUNK + 2 * N);
    const droppedOf = (queue: string): number => {
      let total = 0;
      for (const [, n] of text.matchAll(
        new RegExp(`^tokenproxy_log_dropped_total\\{queue="${queue}",reason="[a-z_]+"\\} (\\d+)$`, 'gm'),
      ))
        total += Number(n);
      return total;
    };
    const junkDropped = droppedOf('request_log_unmatched');

    // Shutdown stores everything still queued.
    await running.close();
    server = undefined;

    const sqlite = new SqliteDatabase(path.join(dataDir, 'tokenproxy.db'), { readonly: true });
    const junkStored = (
      sqlite.prepare('SELECT count(*) AS n FROM request_logs WHERE token_id IS NULL').get() as { n: number }
    ).n;
    const { accountId } = sqlite
      .prepare('SELECT account_id AS accountId FROM tokens WHERE id = ?')
      .get(body.token_id) as { accountId: string };
    sqlite.close();
    const store = await openStore({ database: undefined, dataDir });
    try {
      expect(await store.tokens.get(accountId, body.token_id)).toMatchObject({ requestCount: N });
      const rows = await allPages(
        (page) => store.requestLogs.list(accountId, { tokenId: body.token_id }, page),
        100,
        timestampPosition,
      );
      expect(rows.items.filter((r) => r.authorized && r.status === 200)).toHaveLength(N);
      expect(rows.items.filter((r) => !r.authorized && (r.status === 403 || r.status === 429))).toHaveLength(
        N,
      );
      const anomalies = await allPages(
        (page) => store.anomalies.list(accountId, {}, page),
        100,
        timestampPosition,
      );
      expect(anomalies.items).toHaveLength(N);
      expect(await store.accounts.usage(accountId, rows.items[0]?.timestamp.slice(0, 7) ?? '')).toBe(N);
    } finally {
      await store.close();
    }

    // Junk beyond its budget was dropped, and every dropped record is counted.
    expect(junkDropped).toBe(JUNK - junkStored);
    expect(droppedOf('request_log')).toBe(0);
    expect(droppedOf('anomaly_log')).toBe(0);
    const entries = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries.filter((e) => String(e.msg).startsWith('log worker'))).toEqual([]);
    // The loss is told in a few rate-limited lines, with counts only.
    expect(entries.filter((e) => e.msg === 'log queues dropped records').length).toBeLessThanOrEqual(
      junkDropped > 0 ? 3 : 0,
    );
    const all = logLines.join('\n');
    for (const secret of [token, REAL_KEY, 'a'.repeat(100)]) expect(all).not.toContain(secret);
  }, 120_000);
});

/**
 * The flood of the security review, scaled down: one tenant's public token used from a disallowed
 * Origin by h2 sessions at line rate, with 2,100-character paths and Origins (every refusal, the
 * `ip_backoff` 429s included, makes a record and an anomaly entry), while another tenant's token is
 * used from its own origin. The log budgets are 1 MiB each, so the flood overflows them many times
 * over: when refused and forwarded records shared one queue, it evicted the other tenant's records.
 */
const FLOOD = 6000;
const AUTHORIZED = 100;
const MIB = 1024 * 1024;
const REFUSED_PATH = `/openai/v1/${'p'.repeat(2100)}`;
const EVIL_ORIGIN = `https://evil.example/${'o'.repeat(2100)}`;

describe("a flood of refused requests with one tenant's token", () => {
  let flood: Awaited<ReturnType<typeof startFloodServer>> | undefined;
  let dataDir: string;
  let server: RunningServer | undefined;
  let dispatcher: Agent;
  let apiKeyA = '';

  beforeAll(async () => {
    flood = await startFloodServer('tokenproxy-refusals-', {
      keyedBytes: MIB,
      refusedBytes: MIB,
      anomalyBytes: MIB,
    });
    ({ server, dataDir, dispatcher, apiKey: apiKeyA } = flood);
  });

  afterAll(async () => {
    await flood?.close();
  });

  it("stores every authorized record of another tenant; the flooding token's losses are its own", async () => {
    const running = server as RunningServer;
    const store = await openStore({ database: undefined, dataDir });
    const tenantB = await createAccount(store, 'tenant b', 'free', new Date());
    await store.close();
    const createToken = async (apiKey: string, host: string) => {
      const created = await request(`${running.apiUrl}/v1/tokens`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: host, provider: 'openai', real_key: REAL_KEY, allowed_hosts: [host] }),
      });
      expect(created.statusCode).toBe(201);
      return (await created.body.json()) as { sanitized_key: string; token_id: string };
    };
    const a = await createToken(apiKeyA, 'a.example.com');
    const b = await createToken(tenantB.apiKey, 'b.example.com');

    const flood = h2load(`${running.proxyUrl}${REFUSED_PATH}`, FLOOD, [
      ...['-c', '8', '-m', '50'],
      ...['-H', `authorization: Bearer ${a.sanitized_key}`, '-H', `origin: ${EVIL_ORIGIN}`],
    ]);
    const statuses: number[] = [];
    for (let i = 0; i < AUTHORIZED; i += 1) {
      const res = await request(`${running.proxyUrl}/openai/v1/models`, {
        dispatcher,
        headers: { authorization: `Bearer ${b.sanitized_key}`, origin: 'https://b.example.com' },
      });
      await res.body.text();
      statuses.push(res.statusCode);
    }
    const report = await flood;
    expect(report).toMatch(new RegExp(`requests: ${FLOOD} total, ${FLOOD} started, ${FLOOD} done`));
    expect(statuses.filter((s) => s === 200)).toHaveLength(AUTHORIZED);

    const metricsText = async (): Promise<string> =>
      (await request(`${running.apiUrl}/metrics`, { dispatcher })).body.text();
    const counted = (text: string): number => {
      let total = 0;
      for (const [, n] of text.matchAll(/^tokenproxy_proxy_requests_total\{[^}]*\} (\d+)$/gm))
        total += Number(n);
      return total;
    };
    let text = await metricsText();
    for (let i = 0; i < 100 && counted(text) < FLOOD + AUTHORIZED; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      text = await metricsText();
    }
    expect(counted(text)).toBe(FLOOD + AUTHORIZED);
    const droppedOf = (queue: string, reason = '[a-z_]+'): number => {
      let total = 0;
      for (const [, n] of text.matchAll(
        new RegExp(`^tokenproxy_log_dropped_total\\{queue="${queue}",reason="${reason}"\\} (\\d+)$`, 'gm'),
      ))
        total += Number(n);
      return total;
    };
    const dropped = {
      forwarded: droppedOf('request_log'),
      refused: droppedOf('request_log_refused'),
      refusedShare: droppedOf('request_log_refused', 'token_share'),
      anomalies: droppedOf('anomaly_log'),
    };

    // Shutdown stores everything still queued.
    await running.close();
    server = undefined;

    const sqlite = new SqliteDatabase(path.join(dataDir, 'tokenproxy.db'), { readonly: true });
    const ofA = sqlite
      .prepare(
        'SELECT count(*) AS n, max(length(path)) AS path, max(length(origin)) AS origin FROM request_logs WHERE token_id = ?',
      )
      .get(a.token_id) as { n: number; path: number; origin: number };
    const anomaliesOfA = (
      sqlite.prepare('SELECT count(*) AS n FROM anomalies WHERE token_id = ?').get(a.token_id) as {
        n: number;
      }
    ).n;
    const { accountId } = sqlite
      .prepare('SELECT account_id AS accountId FROM tokens WHERE id = ?')
      .get(b.token_id) as { accountId: string };
    sqlite.close();
    const reopened = await openStore({ database: undefined, dataDir });
    try {
      const rows = await allPages(
        (page) => reopened.requestLogs.list(accountId, { tokenId: b.token_id }, page),
        100,
        timestampPosition,
      );
      // Every one of the other tenant's requests has its record, whatever the flood did.
      expect(rows.items.filter((r) => r.authorized && r.status === 200)).toHaveLength(AUTHORIZED);
      expect(await reopened.tokens.get(accountId, b.token_id)).toMatchObject({ requestCount: AUTHORIZED });
    } finally {
      await reopened.close();
    }
    expect(dropped.forwarded).toBe(0);
    // The flooding token lost its own records and entries beyond its share, every one counted.
    expect(dropped.refusedShare).toBeGreaterThan(0);
    expect(ofA.n + dropped.refused).toBe(FLOOD);
    expect(anomaliesOfA + dropped.anomalies).toBe(FLOOD);
    // Refused records keep 256 bytes of what the requester chose (in UTF-16 units here: all ASCII).
    expect(ofA.path).toBeLessThanOrEqual(256);
    expect(ofA.origin).toBeLessThanOrEqual(256);
  }, 120_000);
});
