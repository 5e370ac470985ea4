import { constants } from 'node:http2';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { databases } from '../support/databases.js';
import { startGatedUpstream, type GatedUpstream } from '../support/gated-upstream.js';
import { MOCK_COMPLETION_TEXT, mockStreamText } from '../support/mock-provider.js';
import { anthropicClient, openaiClient } from '../support/sdk-clients.js';
import { h2Close, h2Connect, h2Request } from './h2-client.js';
import { APP_ORIGIN, bearer, startProxyHarness, type ProxyHarness } from './harness.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

const REAL_KEY = 'sk-proj-H2-REALKEY-3e9a7c1f5b2d8f4a6c0e';
const ANTHROPIC_KEY = 'sk-ant-api03-H2-REALKEY-55bb99dd11ff';

/** Resolves with what `promise` gives, or rejects naming `what` after `ms` (a bound, not a measure). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen`)), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

describe('the proxy over HTTP/2: official SDKs, streaming, bodies, CORS, aborts', () => {
  let h: ProxyHarness;
  let gated: GatedUpstream;
  let h2Agent: Agent;
  let openaiToken: string;
  let anthropicToken: string;
  let gatedToken: string;

  beforeAll(async () => {
    gated = await startGatedUpstream();
    h = await startProxyHarness(sqlite, {
      protocol: 'h2',
      extraCaPem: gated.caCertPem,
      providers: () => [{ id: 'gated', baseUrl: gated.url, auth: { kind: 'bearer' }, builtin: false }],
    });
    ({ token: openaiToken } = await h.createToken({ realKey: REAL_KEY }));
    ({ token: anthropicToken } = await h.createToken({ provider: 'anthropic', realKey: ANTHROPIC_KEY }));
    ({ token: gatedToken } = await h.createToken({ provider: 'gated', realKey: REAL_KEY }));
    h2Agent = new Agent({ connect: { ca: h.ca }, allowH2: true });
  });
  afterAll(async () => {
    await h2Agent?.close();
    await h?.close();
    await gated?.close();
  });

  it('OpenAI SDK over h2: non-streaming and streaming, real key upstream, token gone', async () => {
    h.mock.reset();
    const seen = h.httpVersions.length;
    const client = openaiClient({
      baseURL: `${h.url}/openai/v1`,
      apiKey: openaiToken,
      ca: h.ca,
      dispatcher: h2Agent,
      headers: { Origin: APP_ORIGIN, 'x-mock-chunks': '4', 'x-mock-gap-ms': '20' },
    });
    const completion = await client.chat.completions.create({
      model: 'gpt-mock-1',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(completion.choices[0]?.message.content).toBe(MOCK_COMPLETION_TEXT);
    const stream = await client.chat.completions.create({
      model: 'gpt-mock-1',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(mockStreamText(4));
    const received = await h.mock.waitForRequests(2);
    for (const r of received) {
      expect(r.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
      expect(r.rawHeaders.join('\n')).not.toContain(openaiToken);
      expect(r.headers.origin).toBeUndefined();
    }
    expect(h.httpVersions.slice(seen)).toEqual(['2.0', '2.0']);
  });

  it('Anthropic SDK over h2: bearer and x-api-key, non-streaming and streaming', async () => {
    for (const auth of ['bearer', 'x-api-key'] as const) {
      h.mock.reset();
      const seen = h.httpVersions.length;
      const client = anthropicClient({
        baseURL: `${h.url}/anthropic`,
        apiKey: anthropicToken,
        ca: h.ca,
        dispatcher: h2Agent,
        auth,
        headers: { Origin: APP_ORIGIN, 'x-mock-chunks': '3', 'x-mock-gap-ms': '20' },
      });
      const message = await client.messages.create({
        model: 'claude-mock-1',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hello' }],
      });
      expect(message.content[0]?.type).toBe('text');
      const stream = client.messages.stream({
        model: 'claude-mock-1',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'stream please' }],
      });
      const final = await stream.finalText();
      expect(final).toBe(mockStreamText(3));
      const received = await h.mock.waitForRequests(2);
      for (const r of received) {
        expect(r.headers['x-api-key']).toBe(ANTHROPIC_KEY);
        expect(r.headers.authorization).toBeUndefined();
        expect(r.rawHeaders.join('\n')).not.toContain(anthropicToken);
      }
      expect(h.httpVersions.slice(seen)).toEqual(['2.0', '2.0']);
    }
  });

  it('SSE over h2 is relayed chunk by chunk: the first event arrives while the upstream still holds the stream', async () => {
    gated.reset();
    const session = await h2Connect(h.url, h.ca);
    try {
      const stream = session.request({ ':path': '/gated/v1/chat/completions', ...bearer(gatedToken) });
      const events: string[] = [];
      const firstChunk = new Promise<string>((resolve) =>
        stream.once('data', (d: Buffer) => resolve(d.toString())),
      );
      const ended = new Promise<void>((resolve) => stream.on('end', resolve));
      stream.on('data', () => events.push(gated.open === 1 ? 'chunk while upstream open' : 'chunk after'));
      stream.on('end', () => events.push('end'));
      const first = await within(firstChunk, 10_000, 'a first chunk before the upstream finished');
      expect(first).toContain('"part":"first"');
      // The upstream has not finished: it is held until released, after the first chunk was seen.
      expect(gated.open).toBe(1);
      gated.release();
      await ended;
      expect(events[0]).toBe('chunk while upstream open');
      expect(events.at(-1)).toBe('end');
    } finally {
      await h2Close(session);
    }
  });

  it('request bodies are streamed over h2, with or without content-length', async () => {
    h.mock.reset();
    const session = await h2Connect(h.url, h.ca);
    try {
      const big = 'x'.repeat(3 * 1024 * 1024); // beyond the stream window: flow control must work
      for (const length of [undefined, String(Buffer.byteLength(big))]) {
        const answer = await h2Request(
          session,
          {
            ':method': 'POST',
            ':path': '/openai/v1/echo-body',
            ...bearer(openaiToken),
            'content-type': 'text/plain',
            ...(length === undefined ? {} : { 'content-length': length }),
          },
          big,
        );
        expect(answer.status).toBe(200);
        expect(answer.text.length).toBe(big.length);
      }
      // A request without a body (END_STREAM on HEADERS) is forwarded without one.
      const empty = await h2Request(session, { ':path': '/openai/v1/echo-body', ...bearer(openaiToken) });
      expect(empty.status).toBe(200);
      expect(empty.text).toBe('');
      const received = await h.mock.waitForRequests(3);
      expect(received.map((r) => r.body.length)).toEqual([big.length, big.length, 0]);
      expect(received[0]?.headers['transfer-encoding']).toBe('chunked');
      expect(received[1]?.headers['content-length']).toBe(String(big.length));
      expect(received[2]?.headers['content-length']).toBeUndefined();
      expect(received[2]?.headers['transfer-encoding']).toBeUndefined();
    } finally {
      await h2Close(session);
    }
  });

  it('CORS over h2: the preflight is answered by the proxy, the answer carries our CORS headers', async () => {
    h.mock.reset();
    const session = await h2Connect(h.url, h.ca);
    try {
      const pre = await h2Request(session, {
        ':method': 'OPTIONS',
        ':path': '/openai/v1/chat/completions',
        origin: APP_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      });
      expect(pre.status).toBe(204);
      expect(pre.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
      expect(pre.headers['access-control-allow-headers']).toBe('authorization, content-type');
      const res = await h2Request(session, { ':path': '/openai/v1/models', ...bearer(openaiToken) });
      expect(res.status).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
      expect(res.headers['access-control-expose-headers']).toContain('x-tokenproxy-request-id');
      expect(String(res.headers.vary)).toContain('Origin');
      // Connection-specific fields are never relayed on h2 (Node would refuse to send them at all).
      for (const name of ['connection', 'keep-alive', 'transfer-encoding'])
        expect(res.headers[name]).toBeUndefined();
      expect(h.mock.received.map((r) => r.method)).toEqual(['GET']);
    } finally {
      await h2Close(session);
    }
  });

  it('a name the provider repeats arrives repeated over h2 (cookies, values, vary with Origin)', async () => {
    const session = await h2Connect(h.url, h.ca);
    try {
      const res = await h2Request(session, {
        ':path': '/openai/v1/repeated-headers',
        ...bearer(openaiToken),
        origin: APP_ORIGIN,
      });
      expect(res.status).toBe(200);
      expect(res.text).toBe('{"ok":true}');
      expect(res.headers['set-cookie']).toEqual(['a=1; Secure', 'b=2; Secure']);
      expect(res.headers['x-mock-multi']).toBe('one, two');
      expect(res.headers.vary).toBe('Accept, Origin');
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.headers['x-tokenproxy-request-id']).toMatch(/^req_/);
      expect(typeof res.headers.date).toBe('string');
    } finally {
      await h2Close(session);
    }
  });

  it('a client RST_STREAM aborts the upstream request, zeroes the key, and is recorded once', async () => {
    gated.reset();
    const session = await h2Connect(h.url, h.ca);
    try {
      const before = h.decrypted.length;
      const stream = session.request({ ':path': '/gated/v1/abort-me', ...bearer(gatedToken) });
      await within(new Promise((resolve) => stream.once('data', resolve)), 10_000, 'a first chunk');
      expect(gated.open).toBe(1);
      expect(h.decrypted.length).toBe(before + 1);
      stream.close(constants.NGHTTP2_CANCEL);
      await vi.waitFor(() => expect(gated.open).toBe(0));
      const buf = h.decrypted.at(-1) as Buffer;
      await vi.waitFor(() => expect(buf.every((b) => b === 0)).toBe(true));
      // As on HTTP/1.1, a stream cut after its status went out is recorded with that status.
      const record = await h.waitForRecord((r) => r.path === '/gated/v1/abort-me');
      expect(record).toMatchObject({ status: 200, forwarded: true, authorized: true });
      // The session is still good for the next request.
      expect(
        (await h2Request(session, { ':path': '/openai/v1/models', ...bearer(openaiToken) })).status,
      ).toBe(200);
    } finally {
      gated.release();
      await h2Close(session);
    }
  });

  it('a client RST_STREAM before the provider answered is recorded as 499', async () => {
    h.mock.reset();
    const session = await h2Connect(h.url, h.ca);
    try {
      const stream = session.request({ ':path': '/openai/slow?ms=3000', ...bearer(openaiToken) });
      stream.on('error', () => undefined);
      await h.mock.waitForRequests(1);
      const buf = h.decrypted.at(-1) as Buffer;
      stream.close(constants.NGHTTP2_CANCEL);
      const record = await h.waitForRecord((r) => r.path === '/openai/slow');
      expect(record).toMatchObject({ status: 499, forwarded: true, authorized: true });
      await vi.waitFor(() => expect(buf.every((b) => b === 0)).toBe(true));
    } finally {
      await h2Close(session);
    }
  });

  it('secrets appear in no record, log line or h2 response', () => {
    const everything = [JSON.stringify(h.records), h.logLines.join('\n')].join('\n');
    for (const secret of [REAL_KEY, ANTHROPIC_KEY, openaiToken, anthropicToken, gatedToken]) {
      expect(everything).not.toContain(secret);
    }
    expect(h.records.length).toBeGreaterThan(8);
  });
});
