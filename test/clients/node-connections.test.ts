import { once } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, TokenProxy } from '../../clients/node/src/index.js';
import { nodeTransport, type Transport } from '../../clients/node/src/transport.js';
import { generateSelfSigned, type SelfSignedMaterial } from '../../src/tls/self-signed.js';

// Kept-alive sockets of the Node client against a plain node:http(s) server of the test's own that
// numbers its connections and the requests on each, and closes a kept socket just as a call arrives
// on it: the moment a server's keep-alive timeout meets a call on the wire, made deterministic.

const LIST = '{"object":"list","data":[],"has_more":false,"next_cursor":null}';
const KEY = '{"key_id":"k1","name":"k","provider":"openai","hint":"WXYZ","token_count":0}';

interface Seen {
  readonly conn: number;
  readonly nth: number;
  readonly method: string;
  readonly path: string;
  readonly key: string | undefined;
}

interface TestServer {
  readonly url: string;
  readonly seen: Seen[];
  accepted(): number;
  open(): number;
  paths(path: string): [number, number][];
  server: http.Server;
}

let tlsMaterial: SelfSignedMaterial;
const servers: http.Server[] = [];

beforeAll(async () => {
  tlsMaterial = await generateSelfSigned();
});
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  }
});

/**
 * How the server ends a kept socket a call arrived on without answering it: `end` closes it in good
 * order (TLS close_notify first, then FIN), `destroy` with a FIN only, `reset` with a TCP RST (plain
 * TCP only: Node cannot reset a TLS socket).
 */
type Close = 'end' | 'destroy' | 'reset';

/**
 * /v1/logs and POST /v1/keys: a request that is not the first on its connection gets no answer,
 * its connection is closed. /v1/anomalies: every request is. /v1/webhooks: a status line, then the
 * connection is closed. Anything else: a 200 list (201 key for a POST).
 */
async function serve(protocol: 'http' | 'https', close: Close = 'end'): Promise<TestServer> {
  const seen: Seen[] = [];
  const numbers = new WeakMap<Socket, { conn: number; served: number }>();
  let accepted = 0;
  let open = 0;
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const socket = req.socket;
      const at = numbers.get(socket) ?? { conn: 0, served: 0 };
      at.served += 1;
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const key = req.headers['idempotency-key'];
      seen.push({
        conn: at.conn,
        nth: at.served,
        method: req.method ?? '',
        path,
        key: key as string | undefined,
      });
      const again = at.served > 1;
      if (path === '/v1/anomalies' || (again && (path === '/v1/logs' || path === '/v1/keys'))) {
        if (close === 'reset') socket.resetAndDestroy();
        else if (close === 'destroy') socket.destroy();
        else socket.end();
        return;
      }
      if (path === '/v1/webhooks') {
        socket.write('HTTP/1.1 200 OK\r\n');
        setTimeout(() => socket.destroy(), 100);
        return;
      }
      const body = req.method === 'POST' ? KEY : LIST;
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
      const delay = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
      setTimeout(() => res.end(body), delay);
    });
  };
  const server =
    protocol === 'https'
      ? https.createServer({ key: tlsMaterial.keyPem, cert: tlsMaterial.certPem }, handler)
      : http.createServer(handler);
  server.on(protocol === 'https' ? 'secureConnection' : 'connection', (socket: Socket) => {
    accepted += 1;
    open += 1;
    numbers.set(socket, { conn: accepted, served: 0 });
    socket.on('close', () => (open -= 1));
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `${protocol}://127.0.0.1:${port}`,
    seen,
    accepted: () => accepted,
    open: () => open,
    paths: (path) => seen.filter((s) => s.path === path).map((s) => [s.conn, s.nth]),
    server,
  };
}

/** No retries of the client's own: whatever is survived here, the transport survived. */
function client(server: TestServer): TokenProxy {
  return new TokenProxy({
    apiKey: 'svc_sk_test',
    baseUrl: server.url,
    ca: tlsMaterial.certPem,
    maxRetries: 0,
  });
}

/** What a call failed with (a list's PagePromise is only a thenable). */
async function caught(call: PromiseLike<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (err) {
    return err;
  }
  throw new Error('the call succeeded');
}

async function waitFor(condition: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) return false;
    await sleep(10);
  }
  return true;
}

describe.each([
  ['http', 'end'],
  ['http', 'reset'],
  ['https', 'end'],
  ['https', 'destroy'],
] as const)('@tokenproxy/client over %s, a kept socket closed (%s) as a call arrives', (protocol, close) => {
  it('is replaced: the call is sent once more on a fresh socket, a create with the same key', async () => {
    const server = await serve(protocol, close);
    const c = client(server);
    await c.tokens.list();
    expect((await c.logs.list()).data).toEqual([]);
    expect(server.paths('/v1/logs')).toEqual([
      [1, 2],
      [2, 1],
    ]);
    const created = await c.keys.create({ name: 'k', provider: 'openai', realKey: 'sk-x' });
    expect(created.id).toBe('k1');
    const posts = server.seen.filter((s) => s.method === 'POST');
    expect(posts.map((s) => [s.conn, s.nth])).toEqual([
      [2, 2],
      [3, 1],
    ]);
    expect(new Set(posts.map((s) => s.key)).size).toBe(1);
    expect(posts[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
    // The fresh socket is kept in turn.
    await c.tokens.list();
    expect(server.accepted()).toBe(3);
  });

  it('a request that is not repeatable (a POST without an Idempotency-Key) is not sent again', async () => {
    const server = await serve(protocol, close);
    const send: Transport = nodeTransport({ ca: tlsMaterial.certPem });
    const url = (path: string) => new URL(`${server.url}/v1${path}`);
    await send({ method: 'GET', url: url('/tokens'), headers: {}, timeoutMs: 5000 });
    const error = await send({
      method: 'POST',
      url: url('/keys'),
      headers: { 'content-type': 'application/json' },
      body: '{}',
      timeoutMs: 5000,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ code: 'connection_error' });
    expect(server.paths('/v1/keys')).toEqual([[1, 2]]);
  });
});

describe('@tokenproxy/client kept sockets', () => {
  it('sends a call again only once, and only when nothing of an answer arrived', async () => {
    const server = await serve('http');
    const c = client(server);
    await c.tokens.list();
    // Dropped on the kept socket, and on the fresh one.
    const dropped = await caught(c.anomalies.list());
    expect(dropped).toBeInstanceOf(ConnectionError);
    expect(dropped).toMatchObject({ code: 'connection_error' });
    expect(server.paths('/v1/anomalies')).toEqual([
      [1, 2],
      [2, 1],
    ]);
    await c.tokens.list();
    // Closed after its status line: answered, badly; an ordinary network error.
    const cut = await caught(c.webhooks.list());
    expect(cut).toBeInstanceOf(ConnectionError);
    expect(server.paths('/v1/webhooks')).toEqual([[3, 2]]);
  });

  it("lets go of an idle socket before the server's announced Keep-Alive timeout", async () => {
    const server = await serve('http');
    server.server.keepAliveTimeout = 3000; // announced as `Keep-Alive: timeout=3`
    const c = client(server);
    await c.tokens.list();
    await sleep(2500); // the client keeps it a second less than announced; the server 3 s or more
    expect(server.open()).toBe(0);
    await c.tokens.list();
    expect(server.paths('/v1/tokens')).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });

  it('closes a socket idle for its own idle timeout when the server announces none', async () => {
    const server = await serve('http');
    server.server.keepAliveTimeout = 0; // no `Keep-Alive: timeout=`, and never closed by the server
    const send = nodeTransport({ idleTimeoutMs: 300 });
    const url = new URL(`${server.url}/v1/tokens`);
    await send({ method: 'GET', url, headers: {}, timeoutMs: 5000 });
    expect(await waitFor(() => server.open() === 0)).toBe(true);
    await send({ method: 'GET', url, headers: {}, timeoutMs: 5000 });
    // A call slower than the idle timeout is not cut by it: it applies to idle sockets only.
    url.searchParams.set('delay', '700');
    const slow = await send({ method: 'GET', url, headers: {}, timeoutMs: 5000 });
    expect(slow.status).toBe(200);
    expect(server.seen.map((s) => [s.conn, s.nth])).toEqual([
      [1, 1],
      [2, 1],
      [2, 2],
    ]);
  });
});
