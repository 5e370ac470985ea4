import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { silentConnectionsClosed } from '../support/silent-connections.js';
import { h1Connect } from './h1-socket.js';
import { startProxyHarness, type ProxyHarness } from './harness.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

/**
 * HTTP/1.1 requests Node's parser refuses before the proxy's code runs are answered in the proxy's
 * error shape, with a request id, and the connection closed: not Node's bare status line.
 */
describe('requests the HTTP/1.1 parser refuses, on the proxy listener', () => {
  let h: ProxyHarness;
  beforeAll(async () => {
    h = await startProxyHarness(sqlite);
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Sends raw bytes over TLS (HTTP/1.1 by ALPN); resolves with all that came back once closed. */
  async function raw(bytes: string): Promise<string> {
    const socket = await h1Connect(h.url, h.ca);
    return new Promise((resolve, reject) => {
      let text = '';
      socket.on('data', (piece: Buffer) => (text += piece.toString('latin1')));
      socket.once('close', () => resolve(text));
      socket.once('error', reject);
      socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
      socket.write(bytes);
    });
  }

  it.each([
    [
      'Content-Length beside Transfer-Encoding',
      'POST /openai/v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
      'malformed_request',
    ],
    [
      'a head over 16 KB',
      `GET /openai/v1/models HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'headers_too_large',
    ],
    ['a request line that is not one', 'HELLO THERE\r\n\r\n', 400, 'malformed_request'],
  ])('%s: %i %s in the proxy error shape, connection closed', async (_name, request, status, code) => {
    const lines = h.logLines.length;
    const answer = await raw(request);
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(head.toLowerCase()).toContain('connection: close');
    const json = JSON.parse(body) as {
      type: string;
      error: { type: string; code: string; message: string; request_id: string };
    };
    expect(json.type).toBe('error');
    expect(json.error).toMatchObject({ type: 'tokenproxy_error', code });
    expect(json.error.message.length).toBeGreaterThan(20);
    // The request-id headers every proxy error carries, for the SDKs that expose one or the other.
    for (const name of ['x-request-id', 'request-id', 'x-tokenproxy-request-id']) {
      expect(head.toLowerCase()).toContain(`\r\n${name}: ${json.error.request_id.toLowerCase()}`);
    }
    expect(head.toLowerCase()).toContain('cache-control: no-store');
    expect(head.toLowerCase()).toContain('\r\nx-content-type-options: nosniff\r\n');
    // The same bytes are refused again: the SDKs are told not to retry (they would, on a 4xx of theirs).
    expect(head.toLowerCase()).toContain('\r\nx-should-retry: false\r\n');
    // One info line with the parser's code and the request id; never the request's bytes.
    const logged = h.logLines.slice(lines).filter((line) => line.includes('"client error"'));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain(json.error.request_id);
    expect(logged[0]).not.toContain('aaaaaaaa');
  });

  it('a request without Host reaches the proxy (which ignores Host) and is refused in its shape', async () => {
    const answer = await raw('GET /openai/v1/models HTTP/1.1\r\nConnection: close\r\n\r\n');
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toMatch(/^HTTP\/1\.1 401 /);
    expect(JSON.parse(body)).toMatchObject({ error: { code: 'missing_token' } });
  });

  it('a body that breaks its framing after the head was answered: the connection is closed, the answer left whole', async () => {
    const answer = await raw(
      'POST /openai/v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n',
    );
    // One status line only: the proxy's refusal of the tokenless request, or the parser's 400, never both.
    expect(answer.match(/HTTP\/1\.1 \d{3} /g)).toHaveLength(1);
    const body = answer.split('\r\n\r\n')[1] ?? '';
    expect((JSON.parse(body) as { error: { type: string } }).error.type).toBe('tokenproxy_error');
  });
});

describe('connections that never finish the TLS handshake, on the proxy listener', () => {
  const HANDSHAKE_MS = 300;
  let h: ProxyHarness;
  beforeAll(async () => {
    h = await startProxyHarness(sqlite, { handshakeTimeoutMs: HANDSHAKE_MS });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('are closed when the handshake times out: none keeps a socket (and a file descriptor)', async () => {
    // Answered with an HTTP error that waited for the handshake, each one stayed open for good.
    expect(await silentConnectionsClosed(h.port, 5, HANDSHAKE_MS + 4000)).toBe(5);
    expect((await h.send('/openai/v1/models')).status).toBe(401);
  });
});
