/**
 * `npm run bench:retention [-- --rows N] [-- --requests M]`
 *
 * The proxy's latency with a retention purge running (issue 18). A fresh SQLite data dir gets N
 * (default 1,000,000) request-log records older than `log_retention`; the real server starts on it;
 * then M proxied requests (4 at a time) are timed twice: once with no purge, once while the
 * retention thread deletes the N records. The main thread's event-loop delay is recorded in both
 * phases: the purge runs on its own thread, so that delay should not move. A script, not a test.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import SqliteDatabase from 'better-sqlite3';
import { Agent, request } from 'undici';
import { createAccount } from '../src/accounts/create-account.js';
import type { RunningServer } from '../src/server/start.js';
import { openStore } from '../src/store/open.js';
import { startMockProvider } from '../test/support/mock-provider.js';
import { round, summarize } from './stats.js';

const CONCURRENCY = 4;

// The server comes from dist/ (built by the npm script), where it finds its package.json.
const dist = (file: string): string => new URL(`../../dist/${file}`, import.meta.url).href;
const { startServer } = (await import(dist('server/start.js'))) as typeof import('../src/server/start.js');
const { loadConfig } = (await import(dist('config/load.js'))) as typeof import('../src/config/load.js');
const { createLogger } = (await import(
  dist('observability/logger.js')
)) as typeof import('../src/observability/logger.js');

function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
}

async function phase(
  server: RunningServer,
  token: string,
  dispatcher: Agent,
  requests: number,
  during?: Promise<unknown>,
): Promise<{ latencies: number[]; loopP99: number; loopMax: number; overlapped: number }> {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const latencies: number[] = [];
  let overlapped = 0;
  let done = false;
  void during?.finally(() => (done = true));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < requests) {
      next += 1;
      const start = performance.now();
      const res = await request(`${server.proxyUrl}/openai/v1/models`, {
        dispatcher,
        headers: { authorization: `Bearer ${token}`, origin: 'https://app.example.com' },
      });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`proxy answered ${res.statusCode}`);
      latencies.push(performance.now() - start);
      if (during !== undefined && !done) overlapped += 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  loop.disable();
  return { latencies, loopP99: loop.percentile(99) / 1e6, loopMax: loop.max / 1e6, overlapped };
}

async function main(): Promise<void> {
  const rows = Number(option('rows') ?? 1_000_000);
  const requests = Number(option('requests') ?? 4000);
  const dataDir = await mkdtemp(join(tmpdir(), 'tokenproxy-bench-retention-'));
  const mock = await startMockProvider();
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  let server: RunningServer | undefined;
  try {
    const store = await openStore({ database: undefined, dataDir });
    const { account, apiKey } = await createAccount(store, 'bench', 'unlimited', new Date());
    await store.close();
    const fillStart = performance.now();
    const db = new SqliteDatabase(join(dataDir, 'tokenproxy.db'));
    db.prepare(
      `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
       insert into request_logs (id, account_id, token_id, provider, timestamp, origin, ip, country, pop, path, status, authorized, latency_ms, error_code)
       select printf('req_old%09d', i), ?, null, 'openai',
              strftime('%Y-%m-%dT%H:%M:%fZ', '2020-01-01', '+' || (i / 10) || ' seconds'),
              'https://app.example', '203.0.113.7', null, 'bench', '/openai/v1/models', 200, 1, 3, null
       from n`,
    ).run(rows, account.id);
    db.close();
    const fillMs = performance.now() - fillStart;

    const caFile = join(dataDir, 'provider-ca.pem');
    await writeFile(caFile, mock.caCertPem);
    const configFile = join(dataDir, 'config.json');
    await writeFile(
      configFile,
      JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } } }),
    );
    const config = loadConfig({
      flags: { data_dir: dataDir, api_port: '0', proxy_port: '0', provider_ca: caFile },
      env: {},
      configFile,
    });
    server = await startServer(config, { env: {}, logger: createLogger('warn'), print: () => undefined });
    const created = await request(`${server.apiUrl}/v1/tokens`, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'bench',
        provider: 'openai',
        real_key: 'sk-bench-real-key-000000',
        allowed_hosts: ['app.example.com'],
      }),
    });
    const token = ((await created.body.json()) as { sanitized_key: string }).sanitized_key;

    await phase(server, token, dispatcher, 200); // warm-up
    const base = await phase(server, token, dispatcher, requests);
    const purgeStart = performance.now();
    const purge = server.retention.runNow();
    const during = await phase(server, token, dispatcher, requests, purge);
    const report = await purge;
    const purgeMs = performance.now() - purgeStart;

    const show = (label: string, r: Awaited<ReturnType<typeof phase>>): void => {
      const s = summarize(r.latencies);
      console.log(
        `${label.padEnd(16)} p50 ${round(s.p50, 2)} ms  p90 ${round(s.p90, 2)} ms  p99 ${round(s.p99, 2)} ms  max ${round(s.max, 1)} ms  | event-loop delay p99 ${round(r.loopP99, 1)} ms, max ${round(r.loopMax, 1)} ms`,
      );
    };
    console.log(
      `${rows} old records generated in ${round(fillMs / 1000, 1)} s; ${requests} requests per phase, ${CONCURRENCY} at a time`,
    );
    show('no purge', base);
    show('purge running', during);
    console.log(
      `purge: ${report?.requestLogs ?? 0} records deleted in ${round(purgeMs / 1000, 1)} s; ${during.overlapped} of the second phase's requests completed while it ran; space: ${JSON.stringify(report?.space)}`,
    );
  } finally {
    await server?.close();
    await mock.close();
    await dispatcher.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
