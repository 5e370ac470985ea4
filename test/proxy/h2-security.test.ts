import { createServer, type AddressInfo, type Server } from 'node:net';
import type { ClientHttp2Session } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { h2Close, h2Connect, h2Request } from './h2-client.js';
import { APP_ORIGIN, startProxyHarness, type ProxyHarness } from './harness.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

const REAL_KEY = 'sk-H2-SECURITY-REAL-KEY-Yq2wE4rT6yU8iO0pA1sD3fG5';

/**
 * The SSRF probes of security.test.ts, in HTTP/2's own terms: `:authority` instead of `Host`, `:path`
 * with `//host` or absolute-form, and a forged `host` field beside `:authority`. The upstream host
 * is fixed by the provider whatever the stream says.
 */
describe('proxy security over HTTP/2: the upstream host is fixed by the provider', () => {
  let h: ProxyHarness;
  let evil: Server;
  let evilConnections = 0;
  let evilHost = '';
  let token: string;
  let session: ClientHttp2Session;

  beforeAll(async () => {
    evil = createServer((socket) => {
      evilConnections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    evilHost = `127.0.0.1:${(evil.address() as AddressInfo).port}`;
    h = await startProxyHarness(sqlite);
    ({ token } = await h.createToken({ realKey: REAL_KEY }));
    session = await h2Connect(h.url, h.ca);
  });
  afterAll(async () => {
    await h2Close(session);
    await h.close();
    await new Promise<void>((resolve) => evil.close(() => resolve()));
  });

  const auth = (): Record<string, string> => ({
    authorization: `Bearer ${token}`,
    origin: APP_ORIGIN,
    'x-forwarded-host': evilHost,
    'x-forwarded-proto': 'http',
    forwarded: `host=${evilHost}`,
  });

  it('a forged :authority, a host field beside it, and //host inside the path all go to the provider', async () => {
    h.mock.reset();
    const answers = [
      await h2Request(session, { ':path': '/openai/v1/models', ':authority': evilHost, ...auth() }),
      await h2Request(session, { ':path': '/openai/v1/models', host: evilHost, ...auth() }),
      await h2Request(session, {
        ':path': `/openai//${evilHost}/v1/models`,
        ':authority': evilHost,
        ...auth(),
      }),
      await h2Request(session, { ':path': `//${evilHost}/openai/v1/models`, ...auth() }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 404]);
    expect(JSON.parse(answers[3]?.text ?? '{}')).toMatchObject({ error: { code: 'route_not_found' } });
    const received = await h.mock.waitForRequests(3);
    expect(received.map((r) => r.path)).toEqual(['/v1/models', '/v1/models', `//${evilHost}/v1/models`]);
    for (const r of received) {
      expect(r.headers.host).toBe(`127.0.0.1:${h.mock.port}`);
      expect(r.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
      expect(r.headers['x-forwarded-host']).toBeUndefined();
      expect(r.headers['x-forwarded-proto']).toBeUndefined();
      expect(r.headers.forwarded).toBeUndefined();
      expect(r.headers.origin).toBeUndefined();
      // No pseudo-header leaks into the HTTP/1.1 request upstream.
      expect(r.rawHeaders.filter((_, i) => i % 2 === 0).some((name) => name.startsWith(':'))).toBe(false);
      expect(r.rawHeaders.join('\n')).not.toContain(evilHost);
    }
    expect(evilConnections).toBe(0);
    expect(h.httpVersions.every((v) => v === '2.0')).toBe(true);
  });

  it('an absolute-form :path is a protocol error in HTTP/2: the stream is reset, nothing is forwarded', async () => {
    h.mock.reset();
    const before = h.httpVersions.length;
    const outcome = await h2Request(session, {
      ':path': `https://${evilHost}/openai/v1/models`,
      ':authority': evilHost,
      ...auth(),
    }).then(
      (a) => `status ${a.status}`,
      (err: unknown) => (err as Error).message,
    );
    expect(outcome).toContain('NGHTTP2_PROTOCOL_ERROR');
    // The session survives it, and the next request is the first the handler and the provider see.
    const next = await h2Request(session, { ':path': '/openai/v1/models', ...auth() });
    expect(next.status).toBe(200);
    expect(h.httpVersions.length).toBe(before + 1);
    expect((await h.mock.waitForRequests(1)).map((r) => r.path)).toEqual(['/v1/models']);
    expect(evilConnections).toBe(0);
  });

  it('connection-specific request fields are refused by HTTP/2 itself; a TE other than trailers too', () => {
    for (const field of [{ connection: 'close' }, { 'transfer-encoding': 'chunked' }, { te: 'gzip' }]) {
      // Node's client refuses to send them; the server would reset such a stream (RFC 9113 §8.2.2).
      expect(() => session.request({ ':path': '/openai/v1/models', ...auth(), ...field })).toThrow();
    }
  });
});
