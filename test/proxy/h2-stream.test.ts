import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamOpening, type StreamOpening } from '../../src/proxy/h2-stream.js';
import { databases } from '../support/databases.js';
import { createTestCa } from '../support/test-ca.js';
import { h2Close, h2Connect, h2Request } from './h2-client.js';
import { bearer, startProxyHarness, type ProxyHarness } from './harness.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

describe('streamOpening: what a new h2 stream gets before it is a request', () => {
  it.each<[Record<string, string>, StreamOpening]>([
    [{ ':method': 'POST', ':path': '/openai/v1/chat/completions' }, 'request'],
    [{ ':method': 'GET', ':path': '/x', expect: '100-continue' }, 'continue'],
    [{ ':method': 'POST', ':path': '/x', expect: '100-Continue' }, 'continue'],
    [{ ':method': 'POST', ':path': '/x', expect: 'something-else' }, 'expectation_failed'],
    [{ ':method': 'CONNECT', ':authority': 'api.openai.com:443' }, 'method_not_allowed'],
    [{ ':method': 'CONNECT', ':authority': 'x:443', expect: '100-continue' }, 'method_not_allowed'],
  ])('%o → %s', (headers, want) => {
    expect(streamOpening(headers)).toBe(want);
  });
});

/**
 * An upstream that hangs up while a request body is still coming: it reads the head and the first
 * piece of the body, then destroys its socket.
 */
async function startHangUpUpstream(): Promise<{ url: string; caCertPem: string; server: Server }> {
  const ca = await createTestCa('tokenproxy hang-up upstream CA');
  const { certPem, keyPem } = await ca.issue(['127.0.0.1']);
  const server = createServer({ cert: certPem, key: keyPem }, (req) => {
    req.once('data', () => req.socket.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caCertPem: ca.caCertPem,
    server,
  };
}

describe('h2 streams: CONNECT and Expect answered as node:http answers them', () => {
  let h: ProxyHarness;
  let openaiToken: string;

  beforeAll(async () => {
    h = await startProxyHarness(sqlite, { protocol: 'h2' });
    ({ token: openaiToken } = await h.createToken({}));
  });
  afterAll(async () => {
    await h?.close();
  });

  it('CONNECT is answered 405 in the proxy error shape and reaches no provider', async () => {
    h.mock.reset();
    const session = await h2Connect(h.url, h.ca);
    try {
      const answer = await h2Request(session, { ':method': 'CONNECT', ':authority': 'api.openai.com:443' });
      expect(answer.status).toBe(405);
      expect(h.mock.received).toHaveLength(0);
      // In the proxy's error shape, with the request id it names.
      const body = JSON.parse(answer.text) as {
        type: string;
        error: { type: string; code: string; request_id: string };
      };
      expect(body).toMatchObject({
        type: 'error',
        error: { type: 'tokenproxy_error', code: 'method_not_allowed' },
      });
      for (const name of ['x-request-id', 'request-id', 'x-tokenproxy-request-id']) {
        expect(answer.headers[name]).toBe(body.error.request_id);
      }
    } finally {
      await h2Close(session);
    }
  });

  it('Expect: 100-continue gets its 100 before the body is sent; another expectation gets 417', async () => {
    h.mock.reset();
    const session = await h2Connect(h.url, h.ca);
    try {
      const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [] });
      const stream = session.request(
        {
          ':method': 'POST',
          ':path': '/openai/v1/echo-body',
          ...bearer(openaiToken),
          'content-type': 'application/json',
          expect: '100-continue',
        },
        { endStream: false },
      );
      const pieces: Buffer[] = [];
      stream.on('data', (piece: Buffer) => pieces.push(piece));
      // The body goes only once the proxy has said 100: a proxy that never did would hang this.
      await once(stream, 'continue');
      stream.end(body);
      const [headers] = (await once(stream, 'response')) as [Record<string, string>];
      await once(stream, 'end');
      expect(headers[':status']).toBe(200);
      expect(Buffer.concat(pieces).toString()).toBe(body);

      const refused = await h2Request(session, {
        ':method': 'GET',
        ':path': '/openai/v1/models',
        ...bearer(openaiToken),
        expect: 'something-else',
      });
      expect(refused.status).toBe(417);
      expect(h.mock.received).toHaveLength(1);
    } finally {
      await h2Close(session);
    }
  });
});

describe.each(['http/1.1', 'h2'] as const)('an upstream that hangs up mid-upload, over %s', (protocol) => {
  let h: ProxyHarness;
  let hangUp: Awaited<ReturnType<typeof startHangUpUpstream>>;
  let openaiToken: string;
  let hangUpToken: string;

  beforeAll(async () => {
    hangUp = await startHangUpUpstream();
    h = await startProxyHarness(sqlite, {
      protocol,
      extraCaPem: hangUp.caCertPem,
      providers: () => [{ id: 'hangup', baseUrl: hangUp.url, auth: { kind: 'bearer' }, builtin: false }],
    });
    ({ token: openaiToken } = await h.createToken({}));
    ({ token: hangUpToken } = await h.createToken({ provider: 'hangup' }));
  });
  afterAll(async () => {
    await h?.close();
    hangUp?.server.closeAllConnections();
    await new Promise((resolve) => hangUp?.server.close(resolve));
  });

  it('the client gets its 502 (on h2: not a reset or stalled stream) and the connection serves on', async () => {
    // Over 64 KiB: streamed to the upstream as it comes, so the upstream fails while it is read.
    const big = 'y'.repeat(2 * 1024 * 1024);
    const seen = h.httpVersions.length;
    const answer = await h.send('/hangup/v1/upload', {
      method: 'POST',
      headers: { ...bearer(hangUpToken), 'content-type': 'text/plain' },
      body: big,
    });
    expect([answer.status, answer.json.error?.code]).toEqual([502, 'upstream_unreachable']);
    expect((await h.send('/openai/v1/models', { headers: bearer(openaiToken) })).status).toBe(200);
    expect(h.httpVersions.slice(seen)).toEqual(protocol === 'h2' ? ['2.0', '2.0'] : ['1.1', '1.1']);
    const record = h.records.find((r) => r.provider === 'hangup');
    expect([record?.status, record?.errorCode]).toEqual([502, 'upstream_unreachable']);
  });
});
