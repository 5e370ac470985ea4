import { constants } from 'node:http2';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTED_BODY_MAX_BYTES } from '../../src/proxy/request-body.js';
import { databases } from '../support/databases.js';
import { h2Close, h2Connect } from './h2-client.js';
import { bearer, PROTOCOLS, startProxyHarness, type ProxyHarness } from './harness.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

/** How long a client pauses mid-body in these tests: long enough that forwarding early would show. */
const PAUSE_MS = 500;

/**
 * Small request bodies are read whole before the key is decrypted and the provider is called
 * (src/proxy/request-body.ts); larger ones are streamed. Over both protocols, through undici as the
 * client with a body it sends in two parts.
 */
describe.each(PROTOCOLS)('request bodies over %s: small ones whole, large ones streamed', (protocol) => {
  let h: ProxyHarness;
  beforeAll(async () => {
    h = await startProxyHarness(sqlite, { protocol });
  });
  afterAll(async () => {
    await h?.close();
  });

  /** A POST to the mock's echo route whose body the test writes itself. */
  function post(token: string, length: number, body: PassThrough) {
    return request(`${h.url}/openai/v1/echo-body`, {
      method: 'POST',
      dispatcher: h.dispatcher,
      headers: { ...bearer(token), 'content-type': 'application/json', 'content-length': String(length) },
      body,
    });
  }

  it('a small body goes upstream whole, once it has all arrived, and the wait is not counted as added latency', async () => {
    h.mock.reset();
    const { token } = await h.createToken({});
    const full = Buffer.from(
      JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    );
    const decryptedBefore = h.decrypted.length;
    const body = new PassThrough();
    const answer = post(token, full.length, body);
    body.write(full.subarray(0, 20));
    await sleep(PAUSE_MS);
    // Nothing is forwarded, and the key stays encrypted, while the client is still sending.
    expect(h.mock.received).toHaveLength(0);
    expect(h.decrypted).toHaveLength(decryptedBefore);
    const restAt = Date.now();
    body.end(full.subarray(20));
    const res = await answer;
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe(full.toString());
    const [received] = await h.mock.waitForRequests(1);
    expect(received?.receivedAt).toBeGreaterThanOrEqual(restAt);
    expect(received?.headers['content-length']).toBe(String(full.length));
    expect(received?.headers['transfer-encoding']).toBeUndefined();
    expect(received?.body.equals(full)).toBe(true);
    const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
    expect(record.status).toBe(200);
    expect(record.latencyMs).toBeLessThan(PAUSE_MS);
  });

  /**
   * Sends the head and part of a 200-byte body, pauses, then gives up the way clients do: an HTTP/1.1
   * client closes its connection, an HTTP/2 client resets the stream (undici's h2 client, given a
   * failing body, leaves the stream open instead, so a raw node:http2 client does it here).
   */
  async function giveUpMidBody(token: string): Promise<void> {
    const start = '{"model":"gpt-4o-mini","messages":[';
    if (protocol === 'h2') {
      const session = await h2Connect(h.url, h.ca);
      const stream = session.request(
        { ':method': 'POST', ':path': '/openai/v1/echo-body', ...bearer(token), 'content-length': '200' },
        { endStream: false },
      );
      stream.on('error', () => undefined);
      stream.write(start);
      await sleep(PAUSE_MS);
      stream.close(constants.NGHTTP2_CANCEL);
      await h2Close(session);
      return;
    }
    const body = new PassThrough();
    const answer = post(token, 200, body);
    answer.catch(() => undefined);
    body.write(start);
    await sleep(PAUSE_MS);
    body.destroy(new Error('the client gave up'));
    await expect(answer).rejects.toThrow();
  }

  it('a client that gives up mid-body: nothing forwarded, its key never decrypted, recorded as 499', async () => {
    h.mock.reset();
    const { token, tokenId } = await h.createToken({});
    const decryptedBefore = h.decrypted.length;
    await giveUpMidBody(token);
    const record = await h.waitForRecord((r) => r.tokenId === tokenId);
    expect([record.status, record.forwarded, record.authorized]).toEqual([499, false, true]);
    expect(h.mock.received).toHaveLength(0);
    expect(h.decrypted).toHaveLength(decryptedBefore);
  });

  it('a body over the limit is streamed: the provider has its head before the client has sent it all', async () => {
    h.mock.reset();
    const { token } = await h.createToken({});
    const full = Buffer.alloc(COLLECTED_BODY_MAX_BYTES + 4096, 'x');
    const body = new PassThrough();
    const answer = post(token, full.length, body);
    body.write(full.subarray(0, 1024));
    await sleep(PAUSE_MS);
    const restAt = Date.now();
    body.end(full.subarray(1024));
    const res = await answer;
    expect(res.statusCode).toBe(200);
    expect((await res.body.text()).length).toBe(full.length);
    const [received] = await h.mock.waitForRequests(1);
    expect(received?.receivedAt).toBeLessThan(restAt);
    expect(received?.headers['content-length']).toBe(String(full.length));
    expect(received?.body.equals(full)).toBe(true);
  });
});

/**
 * A client that resets its stream mid-body (RST_STREAM without END_STREAM, as a browser cancelling an
 * upload does). node:http2's own `stream.close(code)` is not that: it sends END_STREAM first, so the
 * body it cut is complete as far as HTTP/2 can tell, and is forwarded as such.
 */
describe('an HTTP/2 request body cut off by the client (RST_STREAM)', () => {
  let h: ProxyHarness;
  beforeAll(async () => {
    h = await startProxyHarness(sqlite, { protocol: 'h2' });
  });
  afterAll(async () => {
    await h?.close();
  });

  for (const length of [undefined, 200, COLLECTED_BODY_MAX_BYTES * 2]) {
    const name = length === undefined ? 'streamed, without a length' : `content-length ${length}`;
    it(`${name}: recorded as 499, and the provider never gets a whole request`, async () => {
      h.mock.reset();
      const { token, tokenId } = await h.createToken({});
      const session = await h2Connect(h.url, h.ca);
      session.on('error', () => undefined);
      try {
        const stream = session.request({
          ':method': 'POST',
          ':path': '/openai/v1/echo-body',
          ...bearer(token),
          'content-type': 'application/json',
          ...(length === undefined ? {} : { 'content-length': String(length) }),
        });
        stream.on('error', () => undefined);
        stream.write(Buffer.alloc(Math.min(length ?? 56, COLLECTED_BODY_MAX_BYTES) / 2, 'x'));
        // Long enough for a streamed body to be on its way upstream already.
        await sleep(PAUSE_MS);
        stream.destroy(new Error('the client gave up'));
        const record = await h.waitForRecord((r) => r.tokenId === tokenId);
        expect(record.status).toBe(499);
        // The mock records a request once its body has ended: a cut one must never get that far.
        await sleep(PAUSE_MS);
        expect(h.mock.received, 'a cut body reached the provider as a complete request').toHaveLength(0);
      } finally {
        await h2Close(session);
      }
    });
  }
});
