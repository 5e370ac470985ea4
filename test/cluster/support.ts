import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createClient } from '@redis/client';
import { request } from 'undici';
import { startServe, type ServerProcess } from '../support/cli.js';

/**
 * A redis-server of the test file's own, on a free loopback port, without persistence, so a test can
 * stop and restart it (never the machine's 6379 server).
 */
export interface TestRedis {
  readonly port: number;
  readonly url: string;
  /** SIGKILL: the connections drop at once, like a crashed server. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence). */
  start(): Promise<void>;
  /** Runs one command on a connection of its own. */
  command(args: string[]): Promise<unknown>;
  /** SIGSTOP / SIGCONT: a Redis that hangs with its connections open (a stalled host, a black hole). */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface RedisTls {
  readonly certPem: string;
  readonly keyPem: string;
  /** The CA that issued the certificate (the test client trusts it). */
  readonly caPem: string;
}

/**
 * `until`'s bound for what these suites wait for: a Redis connection coming up or noticing an outage
 * (reconnects back off), another process's publish or a `serve` member's log line.
 */
export const REDIS_POLL = { timeoutMs: 20_000 };

/** With `tls`, the server speaks TLS only (`rediss://`), with the given certificate. */
export async function startRedis(options: { tls?: RedisTls } = {}): Promise<TestRedis> {
  const port = await freePort();
  const { tls } = options;
  const url = `${tls === undefined ? 'redis' : 'rediss'}://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let listen = ['--port', String(port)];
  if (tls !== undefined) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-redis-tls-'));
    await writeFile(path.join(dir, 'cert.pem'), tls.certPem);
    await writeFile(path.join(dir, 'key.pem'), tls.keyPem, { mode: 0o600 });
    await writeFile(path.join(dir, 'ca.pem'), tls.caPem);
    listen = [
      ...['--port', '0', '--tls-port', String(port), '--tls-auth-clients', 'no'],
      ...['--tls-cert-file', path.join(dir, 'cert.pem'), '--tls-key-file', path.join(dir, 'key.pem')],
      ...['--tls-ca-cert-file', path.join(dir, 'ca.pem')],
    ];
  }

  const command = async (args: string[]): Promise<unknown> => {
    const client = createClient({
      url,
      socket: {
        reconnectStrategy: false,
        connectTimeout: 2_000,
        ...(tls === undefined ? {} : { tls: true as const, ca: [tls.caPem] }),
      },
    });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return await client.sendCommand(args);
    } finally {
      client.destroy();
    }
  };

  const start = async (): Promise<void> => {
    const proc = spawn(
      'redis-server',
      [...listen, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'],
      { stdio: 'ignore' },
    );
    child = proc;
    const deadline = Date.now() + 30_000;
    for (;;) {
      // Ours, not any Redis on that port: the port was free when chosen, and is chosen again on each
      // restart, so a parallel file's server could hold it (a busy port makes ours exit).
      if (proc.exitCode !== null) throw new Error(`redis-server on ${port} exited with ${proc.exitCode}`);
      try {
        const info = String(await command(['INFO', 'server']));
        if (new RegExp(`\\bprocess_id:${String(proc.pid)}\\b`).test(info)) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer in 30 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const kill = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
  };

  const signal = (name: NodeJS.Signals): void => {
    if (child !== undefined && child.exitCode === null) child.kill(name);
  };
  // A paused server must not outlive the test: kill resumes it first (SIGKILL works either way).
  await start();
  return {
    port,
    url,
    kill,
    start,
    command,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    stop: kill,
  };
}

export interface ProxyAnswer {
  readonly status: number;
  readonly code: string | undefined;
  readonly headers: Record<string, string | string[] | undefined>;
}

/** The members of a test cluster: `serve` processes on one database, all with the same KEK and Redis. */
export interface TestCluster {
  readonly servers: ServerProcess[];
  readonly apiKey: string;
  /** A management API call on member `i`. */
  api(
    i: number,
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
  ): Promise<ApiAnswer>;
  /** A proxied `GET /openai/v1/models` on member `i`. */
  proxy(i: number, token: string, headers?: Record<string, string>): Promise<ProxyAnswer>;
  /** 200 answers the proxy gave so far (each counts toward the account's monthly quota). */
  forwarded(): number;
  stop(): Promise<void>;
}

export interface ApiAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

export interface ClusterOptions {
  readonly members: number;
  readonly database: string;
  readonly redisUrl: string | undefined;
  /** The config file's content (providers, plans, trust_proxy…). */
  readonly config: Record<string, unknown>;
  readonly providerCaPem: string;
  /** More environment for member i (a skewed clock, say). */
  readonly memberEnv?: ((i: number) => Record<string, string>) | undefined;
}

/** Starts every member at once (they race for the first account), on insecure HTTP and own data dirs. */
export async function startTestCluster(options: ClusterOptions): Promise<TestCluster> {
  const work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-cluster-'));
  await writeFile(path.join(work, 'config.json'), JSON.stringify(options.config));
  await writeFile(path.join(work, 'ca.pem'), options.providerCaPem);
  const env = { TOKENPROXY_MASTER_KEY: randomBytes(32).toString('base64') };
  const starts = Array.from({ length: options.members }, async (_, i) => {
    const dataDir = path.join(work, `member-${i}`);
    await mkdir(dataDir);
    return startServe(
      [
        '--data-dir',
        dataDir,
        '--database',
        options.database,
        '--insecure-http',
        '--config',
        path.join(work, 'config.json'),
        '--provider-ca',
        path.join(work, 'ca.pem'),
        ...(options.redisUrl === undefined ? [] : ['--redis', options.redisUrl]),
      ],
      { ...env, ...options.memberEnv?.(i) },
    );
  });
  const settled = await Promise.allSettled(starts);
  const servers = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stopAll = async (): Promise<void> => {
    // Every member is stopped (or killed) before a hung one's error is passed on.
    const stopped = await Promise.allSettled(servers.map((s) => s.stop()));
    await rm(work, { recursive: true, force: true });
    const hung = stopped.find((s) => s.status === 'rejected');
    if (hung !== undefined) throw hung.reason;
  };
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed !== undefined) {
    await stopAll();
    throw failed.reason;
  }
  const keys = servers.flatMap((s) => /svc_sk_\w+/.exec(s.stderr())?.[0] ?? []);
  if (keys.length !== 1) {
    await stopAll();
    throw new Error(`expected exactly one member to create the first account, got ${keys.length}`);
  }
  const apiKey = keys[0] as string;
  let forwarded = 0;

  return {
    servers,
    apiKey,
    async api(i, method, url, body) {
      const res = await request(`${member(servers, i).apiUrl}/v1${url}`, {
        method,
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.body.text();
      return {
        status: res.statusCode,
        body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
      };
    },
    async proxy(i, token, headers = {}) {
      const res = await request(`${member(servers, i).proxyUrl}/openai/v1/models`, {
        headers: { authorization: `Bearer ${token}`, ...headers },
      });
      const text = await res.body.text();
      if (res.statusCode === 200) forwarded++;
      let code: string | undefined;
      try {
        code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
      } catch {
        code = undefined;
      }
      return { status: res.statusCode, code, headers: res.headers };
    },
    forwarded: () => forwarded,
    stop: stopAll,
  };
}

function member(servers: ServerProcess[], i: number): ServerProcess {
  const s = servers[i % servers.length];
  if (s === undefined) throw new Error('no such member');
  return s;
}

/** Reads a metric's value from a `/metrics` text (undefined when absent). */
export async function metricValue(apiUrl: string, name: string): Promise<number | undefined> {
  const res = await request(`${apiUrl}/metrics`);
  const text = await res.body.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

export async function readyz(apiUrl: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await request(`${apiUrl}/readyz`);
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}
