import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiHarness, type ApiHarness, type ApiResponse } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import { until } from '../support/poll.js';
import { silentConnectionsClosed } from '../support/silent-connections.js';
import { createTestCa } from '../support/test-ca.js';
import { expectError } from './helpers.js';

/**
 * What a real socket sends, not what `inject` can: requests Node's HTTP parser or Fastify's router
 * refuse before any route runs still get the one error shape with a request id (DESIGN §5).
 */

const sqlite = databases.find((d) => d.name === 'sqlite');
/** The listener's TLS handshake limit, shortened. */
const HANDSHAKE_MS = 300;
/** The listener's limit on a request head, shortened from 20 s. */
const HEAD_MS = 1_000;
if (sqlite === undefined) throw new Error('no sqlite fixture');

interface Raw {
  readonly response: ApiResponse;
  /** Whether the server closed the connection after answering. */
  readonly closed: boolean;
}

describe('the management listener answers malformed requests in the error shape', () => {
  let h: ApiHarness;
  let port = 0;
  let ca = '';

  beforeAll(async () => {
    const testCa = await createTestCa();
    const leaf = await testCa.issue(['127.0.0.1']);
    ca = testCa.caCertPem;
    h = await startApiHarness(sqlite, {
      https: { key: leaf.keyPem, cert: leaf.certPem, handshakeTimeoutMs: HANDSHAKE_MS },
      headTimeoutMs: HEAD_MS,
    });
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const address = h.app.server.address();
    port = typeof address === 'object' && address !== null ? address.port : 0;
  });
  afterAll(async () => {
    await h.close();
  });

  /**
   * Sends `head` (request line and headers, CRLF-separated, no final blank line) and `body` as is;
   * with `unfinished`, the head alone without the blank line that ends it.
   */
  function send(
    head: string,
    body = '',
    options: { closeAfterMs?: number; unfinished?: boolean } = {},
  ): Promise<Raw> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, ca });
      const chunks: Buffer[] = [];
      socket.on('secureConnect', () => {
        socket.write(options.unfinished === true ? `${head}\r\n` : `${head}\r\n\r\n${body}`);
        if (options.closeAfterMs !== undefined) setTimeout(() => socket.destroy(), options.closeAfterMs);
      });
      socket.on('data', (d: Buffer) => {
        chunks.push(d);
        const parsed = parse(Buffer.concat(chunks).toString('utf8'));
        if (parsed !== undefined && !parsed.keepAlive) return; // wait for the close
        if (parsed !== undefined) {
          socket.destroy();
          resolve({ response: parsed.response, closed: false });
        }
      });
      socket.on('error', reject);
      socket.on('close', () => {
        const parsed = parse(Buffer.concat(chunks).toString('utf8'));
        if (parsed === undefined)
          reject(new Error(`no complete response: ${Buffer.concat(chunks).toString()}`));
        else resolve({ response: parsed.response, closed: true });
      });
    });
  }

  const api = (head: string, body = '') => send(head, body);

  it('closes connections that never finish the TLS handshake: none keeps a socket', async () => {
    // Answered with an HTTP error that waited for the handshake, each one stayed open for good.
    expect(await silentConnectionsClosed(port, 5, HANDSHAKE_MS + 4000)).toBe(5);
  });
  const host = () => `Host: 127.0.0.1:${port}`;
  const auth = () => `Authorization: Bearer ${h.apiKey}`;

  it.each([
    [
      'an over-long path parameter',
      () => api(`GET /v1/tokens/${'a'.repeat(150)} HTTP/1.1\r\n${host()}`),
      400,
      'invalid_parameter',
    ],
    [
      'a bad percent-encoding',
      () => api(`GET /v1/tokens/%zz HTTP/1.1\r\n${host()}`),
      400,
      'invalid_parameter',
    ],
    ['an unknown path', () => api(`GET /v1/nothing HTTP/1.1\r\n${host()}`), 404, 'route_not_found'],
    [
      'an unknown method on a known path',
      () => api(`PUT /v1/tokens HTTP/1.1\r\n${host()}\r\nContent-Length: 0`),
      405,
      'method_not_allowed',
    ],
    [
      'a body over 1 MB',
      () =>
        api(
          `POST /v1/keys HTTP/1.1\r\n${host()}\r\n${auth()}\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024 + 10}`,
          ' '.repeat(1024 * 1024 + 10),
        ),
      413,
      'body_too_large',
    ],
    [
      'a body that is not JSON',
      () =>
        api(
          `POST /v1/keys HTTP/1.1\r\n${host()}\r\n${auth()}\r\nContent-Type: text/plain\r\nContent-Length: 2`,
          'hi',
        ),
      415,
      'unsupported_media_type',
    ],
  ])('%s', async (_label, request, status, code) => {
    const { response } = await request();
    expectError(response, status, code);
    expect(response.text).not.toMatch(/FST_|statusCode/);
  });

  it('answers Content-Length with Transfer-Encoding 400 malformed_request and closes the connection', async () => {
    const { response, closed } = await send(
      `POST /v1/keys HTTP/1.1\r\n${host()}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked`,
      '0\r\n\r\n',
    );
    const error = expectError(response, 400, 'malformed_request');
    expect(response.text).not.toMatch(/Client Error/);
    expect(closed).toBe(true);
    expect(h.logs.some((l) => l.includes('"client error"') && l.includes(error.request_id))).toBe(true);
  });

  it('answers headers over the parser limit 431 headers_too_large and closes the connection', async () => {
    const { response, closed } = await send(
      `GET /v1/tokens HTTP/1.1\r\n${host()}\r\nX-Big: ${'a'.repeat(20_000)}`,
    );
    expectError(response, 431, 'headers_too_large');
    expect(closed).toBe(true);
  });

  it('answers a head that never ends 408 request_timeout once its limit passes, and closes the connection', async () => {
    // A slow-loris client: without the limit the listener waited 60 s (Node's default) per socket.
    const started = Date.now();
    const { response, closed } = await send(`GET /healthz HTTP/1.1\r\n${host()}`, '', { unfinished: true });
    expectError(response, 408, 'request_timeout');
    expect(closed).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(HEAD_MS);
  });

  it('lists the allowed methods in Allow on a 405', async () => {
    const { response } = await api(`DELETE /v1/tokens HTTP/1.1\r\n${host()}`);
    expectError(response, 405, 'method_not_allowed');
    expect(response.headers.allow).toBe('GET, HEAD, POST');
    const one = await api(`PUT /v1/tokens/${'1'.repeat(43)} HTTP/1.1\r\n${host()}\r\nContent-Length: 0`);
    expectError(one.response, 405, 'method_not_allowed');
    expect(one.response.headers.allow).toBe('DELETE, GET, HEAD, PATCH');
  });

  it('logs a client that closes mid-body as an info-level abort, not an internal error', async () => {
    const before = h.logs.length;
    await send(
      `POST /v1/keys HTTP/1.1\r\n${host()}\r\nAuthorization: Bearer ${h.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 1000`,
      '{"name":"',
      { closeAfterMs: 50 },
    ).catch(() => undefined);
    // The server notices the close asynchronously: wait for its log line.
    const lines = await until(
      "the server's 'client aborted' log line",
      () => {
        const found = h.logs.slice(before).filter((l) => l.includes('client aborted'));
        return found.length > 0 ? found : undefined;
      },
      { timeoutMs: 5_000, everyMs: 25 },
    );
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    expect(line.level).toBe('info');
    expect(line).not.toHaveProperty('err');
    expect(JSON.stringify(line)).not.toMatch(/stack|svc_sk_/);
    const after = h.logs.slice(before).map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(after.filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
    expect(after.map((l) => l.msg)).not.toContain('request failed');
  });
});

/** A complete HTTP/1.1 response with a Content-Length body, or undefined while incomplete. */
function parse(text: string): { response: ApiResponse; keepAlive: boolean } | undefined {
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? '0');
  const body = text.slice(end + 4);
  if (Buffer.byteLength(body) < length) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return {
    response: { status: Number(statusLine.split(' ')[1]), headers, text: body, body: json },
    keepAlive: headers.connection !== 'close',
  };
}
