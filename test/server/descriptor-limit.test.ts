import { readdir, readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionLimits } from '../../src/config/connection-limits.js';
import { h2Close, h2Connect, h2Request } from '../proxy/h2-client.js';
import { startServe, type ServerProcess } from '../support/cli.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { until } from '../support/poll.js';

/**
 * `serve` at the edge of its descriptor table (docs/operations.md, "Connections and file
 * descriptors"): started with a limit of 256 open files, it is flooded with more connections than
 * that. Before the caps, the flood filled the table: /healthz and the management API refused every
 * new connection, upstream connects failed with EMFILE (502 to requests it could have served) and
 * the log worker could not open the store.
 */
const LIMIT = 256;
const CAP = connectionLimits({ proxy: 'auto', upstream: 'auto' }, LIMIT).proxy ?? 0;
const FLOOD = 300;
const STREAMS = 20;

interface LogLine {
  readonly msg?: string;
  readonly refused?: number;
}

describe(`serve with a descriptor limit of ${LIMIT}`, () => {
  let mock: MockProvider;
  let dataDir: string;
  let server: ServerProcess;
  let ca: string;
  let apiKey: string;
  let token: string;
  const agents: Agent[] = [];

  /** A connection of its own for one call: what a health probe or a new caller opens. */
  const fresh = (): Agent => {
    const agent = new Agent({ connect: { ca }, keepAliveTimeout: 30_000 });
    agents.push(agent);
    return agent;
  };
  const get = async (url: string, dispatcher: Agent) => {
    const res = await request(url, {
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}` },
      headersTimeout: 5000,
      bodyTimeout: 5000,
    });
    return { status: res.statusCode, text: await res.body.text() };
  };
  const proxied = async (suffix: string, dispatcher: Agent) => {
    const res = await request(`${server.proxyUrl}/openai${suffix}`, {
      method: 'POST',
      dispatcher,
      headers: {
        authorization: `Bearer ${token}`,
        origin: 'https://app.example.com',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'gpt-test', messages: [] }),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    return { status: res.statusCode, text: await res.body.text() };
  };
  const lines = (): LogLine[] =>
    server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
  const openDescriptors = async (): Promise<number> =>
    (await readdir(`/proc/${String(server.child.pid)}/fd`)).length;

  beforeAll(async () => {
    mock = await startMockProvider();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-nofile-'));
    const work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-nofile-conf-'));
    await writeFile(path.join(work, 'ca.pem'), mock.caCertPem);
    await writeFile(
      path.join(work, 'config.json'),
      JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } } }),
    );
    server = await startServe(
      [
        '--data-dir',
        dataDir,
        '--config',
        path.join(work, 'config.json'),
        '--provider-ca',
        path.join(work, 'ca.pem'),
      ],
      {},
      { nofile: LIMIT },
    );
    ca = await readFile(path.join(dataDir, 'tls', 'cert.pem'), 'utf8');
    apiKey = /svc_sk_\w+/.exec(server.stderr())?.[0] ?? '';
    const created = await request(`${server.apiUrl}/v1/tokens`, {
      method: 'POST',
      dispatcher: fresh(),
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'nofile',
        provider: 'openai',
        real_key: 'sk-nofile-real-key',
        allowed_hosts: ['app.example.com'],
      }),
    });
    expect(created.statusCode).toBe(201);
    token = ((await created.body.json()) as { sanitized_key: string }).sanitized_key;
  });

  afterAll(async () => {
    await server?.stop();
    await mock?.close();
    await Promise.all(agents.map((agent) => agent.close()));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('a flood of connections past the cap is refused at the door: health, the API and requests within the cap go on, and it recovers by itself', async () => {
    expect(CAP).toBeGreaterThan(STREAMS + 4);
    mock.reset();
    // A caller already connected, and long answers in flight on connections of their own.
    const kept = fresh();
    expect((await proxied('/v1/chat/completions', kept)).status).toBe(200);
    const streamsAgent = fresh();
    const streams = Array.from({ length: STREAMS }, () => proxied('/slow-body?ms=3000', streamsAgent));
    await mock.waitForRequests(STREAMS + 1);

    // The flood: more connections than the process may open files. They never start TLS.
    const port = Number(new URL(server.proxyUrl).port);
    const flood: Socket[] = [];
    let closedByServer = 0;
    for (let i = 0; i < FLOOD; i++) {
      const socket = connect({ host: '127.0.0.1', port });
      socket.on('error', () => undefined);
      socket.once('close', () => closedByServer++);
      flood.push(socket);
    }
    // Those past the cap are closed at once, not held until the handshake times out.
    await until('the connections past the cap to be closed', () => closedByServer >= FLOOD - CAP);

    try {
      expect(server.child.exitCode).toBeNull();
      // Room is left for the rest of the process.
      expect(await openDescriptors()).toBeLessThan(LIMIT - 64);
      // Health probes and the management API open connections of their own, and are answered.
      expect((await get(`${server.apiUrl}/healthz`, fresh())).status).toBe(200);
      expect((await get(`${server.apiUrl}/readyz`, fresh())).status).toBe(200);
      expect((await get(`${server.apiUrl}/v1/tokens`, fresh())).status).toBe(200);
      // A caller within the cap is served; a new connection past it is refused.
      expect((await proxied('/v1/chat/completions', kept)).status).toBe(200);
      await expect(proxied('/v1/chat/completions', fresh())).rejects.toThrow();
      // The answers in flight when the flood came are whole.
      for (const answer of await Promise.all(streams)) {
        expect(answer).toEqual({ status: 200, text: JSON.stringify({ ok: true, waited_ms: 3000 }) });
      }
    } finally {
      for (const socket of flood) socket.destroy();
    }

    // Once the flood is gone, new callers are served again, with nothing restarted.
    const after = await until('a new connection to be served after the flood', async () => {
      try {
        return await proxied('/v1/chat/completions', fresh());
      } catch {
        return undefined;
      }
    });
    expect(after.status).toBe(200);

    // Said once, with what to do, not once per refused connection.
    const capped = lines().filter((l) => l.msg?.startsWith('proxy connections at proxy_max_connections'));
    expect(capped).toHaveLength(1);
    expect(capped[0]?.msg).toContain('LimitNOFILE');
    expect(
      lines().filter((l) => /ran out of file descriptors|upstream request failed/.test(l.msg ?? '')),
    ).toEqual([]);
    const metrics = (await get(`${server.apiUrl}/metrics`, fresh())).text;
    expect(metrics).toContain(`tokenproxy_proxy_connections_max ${CAP}`);
    const refused = Number(/^tokenproxy_proxy_connections_refused_total (\d+)/m.exec(metrics)?.[1]);
    expect(refused).toBeGreaterThanOrEqual(FLOOD - CAP);

    // Every request that was answered has its record: the store was never short of a descriptor.
    const answered = 1 + STREAMS + 1 + 1;
    await until('every answered request to be in the request log', async () => {
      const page = JSON.parse((await get(`${server.apiUrl}/v1/logs?limit=100`, fresh())).text) as {
        data: unknown[];
      };
      return page.data.length === answered;
    });
    expect(lines().filter((l) => /storing a batch failed/.test(l.msg ?? ''))).toEqual([]);
  });

  it('a flood of management connections leaves the proxy its descriptors: new callers are still served', async () => {
    const apiCap = connectionLimits({ proxy: 'auto', upstream: 'auto' }, LIMIT).api ?? 0;
    const port = Number(new URL(server.apiUrl).port);
    const flood: Socket[] = [];
    let closedByServer = 0;
    for (let i = 0; i < FLOOD; i++) {
      const socket = connect({ host: '127.0.0.1', port });
      socket.on('error', () => undefined);
      socket.once('close', () => closedByServer++);
      flood.push(socket);
    }
    try {
      await until(
        'the management connections past its cap to be closed',
        () => closedByServer >= FLOOD - apiCap,
      );
      expect(server.child.exitCode).toBeNull();
      expect(await openDescriptors()).toBeLessThan(LIMIT - 64);
      expect((await proxied('/v1/chat/completions', fresh())).status).toBe(200);
    } finally {
      for (const socket of flood) socket.destroy();
    }
    await until('the management API to answer again', async () => {
      try {
        return (await get(`${server.apiUrl}/healthz`, fresh())).status === 200;
      } catch {
        return false;
      }
    });
    expect(lines().filter((l) => l.msg?.startsWith('management connections at their cap'))).toHaveLength(1);
  });

  it('more HTTP/2 streams than descriptors wait for an upstream connection instead of failing with 502', async () => {
    const sessions = await Promise.all([1, 2, 3].map(() => h2Connect(server.proxyUrl, ca)));
    try {
      const answers = await Promise.all(
        sessions.flatMap((session) =>
          Array.from({ length: 100 }, () =>
            h2Request(session, {
              ':method': 'GET',
              ':path': '/openai/slow-body?ms=300',
              authorization: `Bearer ${token}`,
              origin: 'https://app.example.com',
            }),
          ),
        ),
      );
      const statuses = new Map<number, number>();
      for (const { status } of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1);
      expect(Object.fromEntries(statuses)).toEqual({ 200: 300 });
    } finally {
      await Promise.all(sessions.map(h2Close));
    }
    expect(
      lines().filter((l) => /ran out of file descriptors|upstream request failed/.test(l.msg ?? '')),
    ).toEqual([]);
  });
});
