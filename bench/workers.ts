/**
 * `npm run bench:workers [-- --quick]`
 *
 * Throughput of `tokenproxy serve --workers 2` against `--workers 1` on this machine: the stand-in
 * provider (bench/provider.ts), tokenproxy (primary and workers), a redis-server and the load
 * generator (h2load, closed loop, 32 keep-alive TLS connections) all run unpinned on the same
 * cores, so the numbers say what a second worker buys when the load generator competes for the
 * same CPUs, not what it buys on a dedicated host. Rounds alternate 1 and 2 workers so that drift
 * hits both alike. See docs/performance.md.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchFailure, h2load } from './h2load.js';
import { makeCertificates } from './load/setup.js';
import { Children } from './procs.js';
import { median, round, summarize } from './stats.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin/tokenproxy');
const CONNECTIONS = 32;

const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 1 : 3;
const REQUESTS = quick ? 3000 : 10_000;

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolvePort(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

function postJson(url: string, ca: string, apiKey: string, body: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolveBody, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        ca,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (s: string) => (text += s));
        res.on('end', () => {
          if (res.statusCode !== 201)
            reject(new BenchFailure(`POST ${url} answered ${res.statusCode}: ${text}`));
          else resolveBody(JSON.parse(text) as Record<string, unknown>);
        });
      },
    );
    req.once('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function main(): Promise<void> {
  const children = new Children();
  const tmp = await mkdtemp(join(tmpdir(), 'tokenproxy-bench-workers-'));
  const stopAll = async () => {
    await children.stopAll();
    await rm(tmp, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void stopAll().then(() => process.exit(130)));
  try {
    const tls = await makeCertificates(tmp);
    const provider = children.start('stand-in provider', process.execPath, [
      join(ROOT, 'dist-bench/bench/provider.js'),
      tls.cert,
      tls.key,
    ]);
    const providerPort = Number((await children.waitFor(provider, /\{"port":(\d+)\}/, 10_000))[1]);
    const redisPort = await freePort();
    const redis = children.start('redis-server', 'redis-server', [
      '--port',
      String(redisPort),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
    ]);
    await children.waitFor(redis, /Ready to accept connections/, 10_000);
    const config = join(tmp, 'config.json');
    await writeFile(
      config,
      JSON.stringify({
        providers: { openai: { base_url: `https://127.0.0.1:${providerPort}`, auth: 'bearer' } },
      }),
    );
    const body = join(tmp, 'body.json');
    await writeFile(
      body,
      JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    );

    const runOnce = async (workers: number, pass: number) => {
      const dataDir = join(tmp, `data-${workers}-${pass}`);
      await mkdir(dataDir);
      const common = ['--data-dir', dataDir];
      const created = await children.run(
        'accounts create',
        process.execPath,
        [BIN, 'accounts', 'create', '--name', 'bench', '--plan', 'unlimited', '--json', ...common],
        60_000,
      );
      if (created.code !== 0) throw new BenchFailure(`accounts create failed: ${created.stderr}`);
      const apiKey = (JSON.parse(created.stdout) as { api_key: string }).api_key;
      const serve = children.start(`tokenproxy --workers ${workers}`, process.execPath, [
        BIN,
        'serve',
        ...common,
        '--config',
        config,
        '--provider-ca',
        tls.ca,
        '--api-port',
        '0',
        '--proxy-port',
        '0',
        '--log-level',
        'warn',
        '--workers',
        String(workers),
        '--redis',
        `redis://127.0.0.1:${redisPort}`,
      ]);
      try {
        await children.waitFor(serve, /^Ready\./m, 120_000);
        const api = /management API\s+(https:\/\/[\d.]+:\d+)\/v1/.exec(serve.stderr)?.[1];
        const proxy = /proxy\s+(https:\/\/[\d.]+:\d+)/.exec(serve.stderr)?.[1];
        if (api === undefined || proxy === undefined)
          throw new BenchFailure(`no addresses in:\n${serve.stderr}`);
        const ca = await readFile(join(dataDir, 'tls/cert.pem'), 'utf8');
        const token = await postJson(`${api}/v1/tokens`, ca, apiKey, {
          name: 'bench',
          provider: 'openai',
          real_key: 'sk-bench-0123456789abcdefghijklmnop',
          allowed_hosts: ['localhost'],
        });
        const run = {
          url: `${proxy}/openai/v1/chat/completions`,
          headers: [
            `authorization: Bearer ${String(token.sanitized_key)}`,
            'origin: http://localhost',
            'content-type: application/json',
          ],
          bodyFile: body,
          connections: CONNECTIONS,
          // Closed loop: the request count sets the length; this bounds it (h2load is stopped after it + 30 s).
          durationS: 90,
          warmS: 1,
          logFile: join(tmp, `h2load-${workers}-${pass}.log`),
          expectStatus: [200],
        };
        // A short warm-up (JIT, connection pools), then the measured run.
        await h2load(children, { ...run, requests: 2000 });
        const result = await h2load(children, { ...run, requests: REQUESTS });
        return { rps: result.rps, latency: summarize(result.latenciesMs) };
      } finally {
        await children.stop(serve, 30_000);
      }
    };

    const results: Record<1 | 2, { rps: number; p50: number; p99: number }[]> = { 1: [], 2: [] };
    for (let pass = 0; pass < ROUNDS; pass++) {
      for (const workers of [1, 2] as const) {
        const r = await runOnce(workers, pass);
        results[workers].push({ rps: r.rps, p50: r.latency.p50, p99: r.latency.p99 });
        process.stdout.write(
          `round ${pass + 1}, --workers ${workers}: ${round1(r.rps)} req/s, p50 ${round(r.latency.p50)} ms, p99 ${round(r.latency.p99)} ms\n`,
        );
      }
    }
    const one = median(results[1].map((r) => r.rps));
    const two = median(results[2].map((r) => r.rps));
    const summary = {
      cpus: cpus().length,
      cpu_model: cpus()[0]?.model,
      connections: CONNECTIONS,
      requests_per_run: REQUESTS,
      rounds: ROUNDS,
      workers_1: { median_rps: round1(one), runs: results[1] },
      workers_2: { median_rps: round1(two), runs: results[2] },
      ratio: round(two / one),
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    process.stdout.write(
      `--workers 2 / --workers 1 throughput: ${round(two / one)}x (median of ${ROUNDS} round(s); load generator on the same cores)\n`,
    );
  } finally {
    await stopAll();
  }
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
