import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os, { availableParallelism } from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveCpuShare, servePoolSize } from '../../src/runtime/v8-tuning.js';
import { cmdlineOf, runCli, startServe, v8HelperThreads, type ServerProcess } from '../support/cli.js';
import {
  MOCK_CHAT_MODEL,
  mockStreamText,
  startMockProvider,
  type MockProvider,
} from '../support/mock-provider.js';
import { until } from '../support/poll.js';
import { SLOW_POLL, alive, socketOwners, startRedis, type TestRedis } from './workers-support.js';

const REAL_KEY = `sk-workers-${Date.now()}-real-key`;
const ORIGIN = 'https://app.example.com';

describe('serve --workers: settings that refuse to start', () => {
  let dataDir = '';
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-workers-bad-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });
  const serve = (args: string[], env: Record<string, string> = {}) =>
    runCli(
      ['serve', '--data-dir', dataDir, '--insecure-http', '--api-port', '0', '--proxy-port', '0', ...args],
      env,
    );

  it('--workers 2 without redis: exit 2, naming redis, and nothing created', async () => {
    const result = await serve(['--workers', '2']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/setting workers: 2 workers need setting redis \(--redis/);
    expect(result.stderr).not.toContain('svc_sk_');
  });

  it.each([['0'], ['abc'], ['257'], ['1.5'], ['-1']])(
    '--workers %s: exit 2 with what is accepted',
    async (value) => {
      const result = await serve(['--workers', value, '--redis', 'redis://127.0.0.1:1']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('Setting "workers" has an invalid value');
      expect(result.stderr).toContain('expected a whole number from 1 to 256, or auto (one per CPU)');
    },
  );

  it('TOKENPROXY_WORKERS is read like the flag', async () => {
    const result = await serve([], { TOKENPROXY_WORKERS: 'many' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Setting "workers" has an invalid value');
    expect(result.stderr).toContain('TOKENPROXY_WORKERS');
  });
});

describe('serve --workers 2 (the real binary)', () => {
  let mock: MockProvider;
  let redis: TestRedis;
  let dataDir = '';
  let work = '';
  let server: ServerProcess;
  let apiKey = '';
  let token = '';
  let pids: number[] = [];
  let primary = 0;

  const api = async (method: string, url: string, body?: unknown) => {
    const res = await request(`${server.apiUrl}${url}`, {
      method: method as 'GET',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.statusCode, text: await res.body.text() };
  };
  /** A streamed chat completion of `chunks` pieces `gapMs` apart, read to the end. */
  const stream = async (chunks: number, gapMs: number) => {
    // A connection of its own: a pooled one may lead to a worker killed since.
    const dispatcher = new Agent({ headersTimeout: 60_000, bodyTimeout: 60_000 });
    const res = await request(`${server.proxyUrl}/openai/v1/chat/completions`, {
      dispatcher,
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        origin: ORIGIN,
        'content-type': 'application/json',
        'x-mock-chunks': String(chunks),
        'x-mock-gap-ms': String(gapMs),
      },
      body: JSON.stringify({
        model: MOCK_CHAT_MODEL,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    const body = await res.body.text();
    await dispatcher.close();
    const text = [...body.matchAll(/"content":"([^"]*)"/g)].map((m) => m[1]).join('');
    return { status: res.statusCode, text };
  };
  const metrics = async () => (await request(`${server.apiUrl}/metrics`)).body.text();
  const metric = (text: string, name: string): number | undefined => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };
  const forwarded = (text: string): number =>
    text
      .split('\n')
      .filter((l) => l.startsWith('tokenproxy_proxy_requests_total{') && l.includes('status="200"'))
      .reduce((sum, l) => sum + Number(l.split(' ')[1]), 0);

  beforeAll(async () => {
    mock = await startMockProvider();
    redis = await startRedis();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-workers-'));
    work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-workers-conf-'));
    await writeFile(path.join(work, 'ca.pem'), mock.caCertPem);
    await writeFile(
      path.join(work, 'config.json'),
      JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } }, workers: 2 }),
    );
    // `workers` from the config file, `redis` from the environment: read like every other setting.
    server = await startServe(
      [
        '--data-dir',
        dataDir,
        '--insecure-http',
        '--config',
        path.join(work, 'config.json'),
        '--provider-ca',
        path.join(work, 'ca.pem'),
        '--drain-timeout',
        '30s',
      ],
      { TOKENPROXY_REDIS: redis.url },
    );
    const line = /workers\s+2 \(pids (\d+), (\d+)\), primary pid (\d+)/.exec(server.stderr());
    expect(line).not.toBeNull();
    pids = [Number(line?.[1]), Number(line?.[2])];
    primary = Number(line?.[3]);
    expect(primary).toBe(server.child.pid);
    apiKey = /svc_sk_\w+/.exec(server.stderr())?.[0] ?? '';
    // The first account is created once, by the primary.
    expect(server.stderr().match(/Created account "default"/g)).toHaveLength(1);
    const created = await api('POST', '/v1/tokens', {
      name: 'workers',
      provider: 'openai',
      real_key: REAL_KEY,
      allowed_hosts: ['app.example.com'],
    });
    expect(created.status).toBe(201);
    token = (JSON.parse(created.text) as { sanitized_key: string }).sanitized_key;
  }, 120_000);

  afterAll(async () => {
    if (server?.child.exitCode === null) server.child.kill('SIGKILL');
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await mock?.close();
    await redis?.stop();
    await rm(dataDir, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  });

  it('both workers answer on the shared ports; /metrics shows the whole service', async () => {
    const port = Number(new URL(server.proxyUrl).port);
    // Six slow streams at once: node:cluster hands connections to the workers in turn.
    const streams = Array.from({ length: 6 }, () => stream(20, 100));
    // The primary owns a connection only for the moment it hands it to a worker.
    const workerOwners = async () => (await socketOwners(port)).filter((pid) => pid !== primary);
    const owners = await until(
      'connections owned by both workers',
      async () => {
        const found = await workerOwners();
        return found.length >= 2 ? found : undefined;
      },
      SLOW_POLL,
    );
    expect(owners.sort()).toEqual([...pids].sort());
    const done = await Promise.all(streams);
    for (const s of done) expect(s).toEqual({ status: 200, text: mockStreamText(20) });

    const text = await metrics();
    expect(metric(text, 'tokenproxy_workers')).toBe(2);
    // A 0/1 gauge: the lowest worker's value, not the sum (summed, 2 workers read 2, one down read 1).
    expect(metric(text, 'tokenproxy_redis_up')).toBe(1);
    // Each worker counted its own requests; the scrape sums them, whichever worker answered it.
    expect(forwarded(text)).toBe(6);
    expect(forwarded(await metrics())).toBe(6);
    expect(text).not.toContain(REAL_KEY);
    expect(text).not.toContain(token);
  });

  it("each worker runs with the primary's start-time flags and its share of V8 helper threads", async () => {
    const pool = servePoolSize(availableParallelism(), 2);
    for (const pid of [primary, ...pids]) {
      const cmdline = await cmdlineOf(pid);
      expect(cmdline).toContain(`--v8-pool-size=${pool}`);
      expect(cmdline).toContain('--max-semi-space-size=8');
      expect(cmdline).toContain('--heap-growing-percent=100');
      expect(cmdline).toContain('--no-memory-reducer');
      // CI's 2 CPUs shared by 2 workers: one each, so each scavenges on its own thread.
      expect(cmdline.includes('--no-parallel-scavenge')).toBe(serveCpuShare(availableParallelism(), 2) === 1);
    }
    // Counted where Node names them (24); on 22 the flag above is what can be checked.
    for (const pid of pids) {
      const helpers = await v8HelperThreads(pid);
      if (helpers !== undefined) expect(helpers).toBe(pool);
    }
  });

  it('a worker killed with -9 is replaced, and the service keeps answering meanwhile', async () => {
    const [victim, survivor] = pids as [number, number];
    process.kill(victim, 'SIGKILL');
    // Node's round-robin hands out connections until the primary sees the worker gone (a connection
    // handed over at that instant is lost with it, docs/workers.md); from then on the survivor
    // takes everything while the replacement starts.
    await until(
      'the primary to notice the killed worker',
      () => server.stdout().includes(`"pid":${victim},"code":null,"signal":"SIGKILL"`),
      SLOW_POLL,
    );
    for (let i = 0; i < 4; i++) expect((await stream(2, 0)).status).toBe(200);
    const text = await until(
      'the metrics to count the replacement worker',
      async () => {
        const t = await metrics();
        return metric(t, 'tokenproxy_workers') === 2 && metric(t, 'tokenproxy_worker_restarts_total') === 1
          ? t
          : undefined;
      },
      SLOW_POLL,
    );
    expect(text).toContain('tokenproxy_worker_restarts_total 1');
    // The killed worker's counts stay in the sums (a drop would read as a counter reset): the six
    // of the first test, every one scraped before the kill, and the four since.
    expect(forwarded(text)).toBe(10);
    expect(server.stdout()).toMatch(
      new RegExp(`"pid":${victim},"code":null,"signal":"SIGKILL".*"msg":"worker died; restarting it"`),
    );
    const replacement = /"worker":\d,"pid":(\d+),"msg":"worker ready"/g;
    // The primary counts a forked worker before the worker reports ready: wait for its line.
    const fresh = await until(
      'the replacement to report ready',
      () => {
        const ready = [...server.stdout().matchAll(replacement)].map((m) => Number(m[1]));
        const unseen = ready.filter((pid) => !pids.includes(pid));
        return unseen.length > 0 ? unseen : undefined;
      },
      SLOW_POLL,
    );
    expect(fresh).toHaveLength(1);
    pids = [survivor, fresh[0] as number];
    expect(alive(victim)).toBe(false);
    // The replacement logs under its slot's number, as the primary names it (docs/workers.md), not
    // node:cluster's id, which grows with each restart.
    const slot = new RegExp(`"worker":(\\d+),"pid":${victim},"code":null`).exec(server.stdout())?.[1];
    expect(slot).toBeDefined();
    await until(
      "the replacement's own log line, under its slot",
      () =>
        new RegExp(`"worker":${slot},"pid":${fresh[0]}[^\\n]*"msg":"connected to Redis"`).test(
          server.stdout(),
        ),
      SLOW_POLL,
    );
  }, 120_000);

  it('SIGTERM: every worker drains its in-flight stream, then every process exits', async () => {
    const port = Number(new URL(server.proxyUrl).port);
    mock.reset();
    // Slow streams (about 4 s each) on both workers, all under way before the signal.
    const streams = Array.from({ length: 4 }, () => stream(40, 100));
    await mock.waitForRequests(4, 60_000);
    const owners = (await socketOwners(port)).filter((pid) => pid !== primary);
    expect(owners.sort()).toEqual([...pids].sort());
    const code = server.stop();
    const done = await Promise.all(streams);
    for (const s of done) expect(s).toEqual({ status: 200, text: mockStreamText(40) });
    expect(await code).toBe(0);
    for (const pid of pids) expect(alive(pid)).toBe(false);
    expect(server.stdout().match(/"msg":"worker stopped"/g)?.length).toBeGreaterThanOrEqual(2);
  }, 120_000);
});

describe('serve --workers 2 over TLS on a new data dir', () => {
  let redis: TestRedis | undefined;
  let dataDir = '';
  let server: ServerProcess | undefined;
  afterAll(async () => {
    await server?.stop();
    await redis?.stop();
    if (dataDir !== '') await rm(dataDir, { recursive: true, force: true });
  });

  it('the banner says the certificate was generated (by the primary), as a single serve says', async () => {
    redis = await startRedis();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-workers-tls-'));
    server = await startServe(['--data-dir', dataDir, '--workers', '2', '--redis', redis.url]);
    const out = server.stderr();
    expect(out).toContain(`TLS 1.3 certificate generated: ${path.join(dataDir, 'tls', 'cert.pem')}`);
    expect(out).not.toContain('certificate loaded');
    expect(server.apiUrl).toMatch(/^https:/);
  }, 120_000);
});
