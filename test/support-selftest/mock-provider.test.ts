import OpenAI from 'openai';
import { Agent, fetch as undiciFetch, request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  MOCK_COMPLETION_TEXT,
  mockBigByte,
  mockStreamText,
  startMockProvider,
  type MockProvider,
} from '../support/mock-provider.js';
import { anthropicClient, openaiClient } from '../support/sdk-clients.js';

const ORIGIN = 'https://app.example.com';

interface TimedEvent {
  at: number;
  text: string;
}

/** Reads an SSE body, timestamping each event as it arrives (not when the whole body is done). */
async function readSseEvents(body: AsyncIterable<Buffer>): Promise<TimedEvent[]> {
  const events: TimedEvent[] = [];
  let pending = '';
  for await (const chunk of body) {
    pending += chunk.toString('utf8');
    let end: number;
    while ((end = pending.indexOf('\n\n')) !== -1) {
      events.push({ at: performance.now(), text: pending.slice(0, end) });
      pending = pending.slice(end + 2);
    }
  }
  return events;
}

function dataOf(event: TimedEvent): string {
  return event.text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice('data: '.length))
    .join('\n');
}

describe('mock provider', () => {
  let mock: MockProvider;
  let dispatcher: Agent;

  beforeAll(async () => {
    mock = await startMockProvider({ chunks: 4, gapMs: 30 });
    dispatcher = new Agent({ connect: { ca: mock.caCertPem } });
  });

  afterAll(async () => {
    await mock.close();
    await dispatcher.close();
  });

  beforeEach(() => mock.reset());

  function post(path: string, body: unknown, headers: Record<string, string> = {}) {
    return request(`${mock.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      dispatcher,
    });
  }

  it('listens on loopback with a certificate for 127.0.0.1 and localhost from its own CA', async () => {
    expect(mock.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(mock.caCertPem).toContain('BEGIN CERTIFICATE');
    const byName = new Agent({ connect: { ca: mock.caCertPem, servername: 'localhost' } });
    try {
      const res = await request(`${mock.url}/v1/models`, { dispatcher: byName });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
    } finally {
      await byName.close();
    }
  });

  it('is not trusted without its CA', async () => {
    const plain = new Agent();
    try {
      await expect(request(`${mock.url}/v1/models`, { dispatcher: plain })).rejects.toThrow();
    } finally {
      await plain.close();
    }
  });

  it('answers a chat completion as JSON, with or without a path prefix', async () => {
    for (const path of ['/v1/chat/completions', '/openai/v1/chat/completions']) {
      const res = await post(path, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json');
      const text = await res.body.text();
      expect(text.length).toBeGreaterThan(400);
      expect(text.length).toBeLessThan(1000);
      const json = JSON.parse(text) as {
        object: string;
        model: string;
        choices: { message: { content: string } }[];
      };
      expect(json.object).toBe('chat.completion');
      expect(json.model).toBe('gpt-test');
      expect(json.choices[0]?.message.content).toBe(MOCK_COMPLETION_TEXT);
    }
  });

  it('lists models', async () => {
    const res = await request(`${mock.url}/v1/models`, { dispatcher });
    const json = (await res.body.json()) as { object: string; data: { id: string }[] };
    expect(json.object).toBe('list');
    expect(json.data.length).toBeGreaterThan(0);
  });

  it('streams SSE chunks spread out in time, with per-request overrides', async () => {
    const chunks = 6;
    const gapMs = 40;
    const res = await post(
      '/v1/chat/completions',
      { model: 'gpt-test', stream: true, messages: [] },
      { 'x-mock-chunks': String(chunks), 'x-mock-gap-ms': String(gapMs) },
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = await readSseEvents(res.body);
    expect(events.map(dataOf).at(-1)).toBe('[DONE]');
    const data = events.slice(0, -1);
    expect(data).toHaveLength(chunks);
    const pieces = data.map((event) => {
      const json = JSON.parse(dataOf(event)) as {
        object: string;
        choices: { delta: { content?: string } }[];
      };
      expect(json.object).toBe('chat.completion.chunk');
      return json.choices[0]?.delta.content ?? '';
    });
    expect(pieces.join('')).toBe(mockStreamText(chunks));
    const first = data[0];
    const last = data.at(-1);
    if (!first || !last) throw new Error('no events');
    expect(last.at - first.at).toBeGreaterThanOrEqual((chunks - 1) * gapMs * 0.5);
  });

  it('uses the configured chunk count when the request does not override it', async () => {
    const res = await post('/v1/chat/completions', { stream: true });
    const events = await readSseEvents(res.body);
    expect(events).toHaveLength(4 + 1);
  });

  it('streams the Anthropic event sequence', async () => {
    const res = await post('/anthropic/v1/messages', { model: 'claude-test', stream: true, max_tokens: 5 });
    const events = await readSseEvents(res.body);
    const types = events.map((event) => /^event: (.+)$/m.exec(event.text)?.[1]);
    expect(types).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  it('echoes credentials in a header and in the body', async () => {
    const res = await request(`${mock.url}/proxy/echo-auth`, {
      method: 'PUT',
      headers: { authorization: 'Bearer sk-real', 'x-api-key': 'sk-ant-real', 'x-goog-api-key': 'AIza-real' },
      dispatcher,
    });
    expect(res.headers['x-echo-authorization']).toBe('Bearer sk-real');
    expect(await res.body.json()).toEqual({
      authorization: 'Bearer sk-real',
      'x-api-key': 'sk-ant-real',
      'x-goog-api-key': 'AIza-real',
    });
  });

  it('records method, path with query, headers (with duplicates), body and time', async () => {
    const before = Date.now();
    const res = await request(`${mock.url}/prefix/echo-body?a=1&b=two`, {
      method: 'POST',
      headers: ['content-type', 'text/plain', 'x-dup', 'one', 'x-dup', 'two'],
      body: 'hello body',
      dispatcher,
    });
    expect(res.headers['content-type']).toBe('text/plain');
    expect(await res.body.text()).toBe('hello body');
    const [rec] = await mock.waitForRequests(1);
    if (!rec) throw new Error('nothing recorded');
    expect(rec.method).toBe('POST');
    expect(rec.path).toBe('/prefix/echo-body?a=1&b=two');
    expect(rec.headers['content-type']).toBe('text/plain');
    expect(rec.headers['x-dup']).toBe('one, two');
    const dupValues = rec.rawHeaders.filter(
      (_, i, all) => i % 2 === 1 && all[i - 1]?.toLowerCase() === 'x-dup',
    );
    expect(dupValues).toEqual(['one', 'two']);
    expect(Buffer.isBuffer(rec.body)).toBe(true);
    expect(rec.body.toString()).toBe('hello body');
    expect(rec.receivedAt).toBeGreaterThanOrEqual(before);
  });

  it('waitForRequests waits for requests that arrive later, and times out otherwise', async () => {
    const waiting = mock.waitForRequests(2);
    await (await request(`${mock.url}/v1/models`, { dispatcher })).body.dump();
    await (await request(`${mock.url}/v1/models`, { dispatcher })).body.dump();
    expect(await waiting).toHaveLength(2);
    await expect(mock.waitForRequests(3, 50)).rejects.toThrow(/waited 50 ms/);
  });

  it('answers /status/:code with a provider-style error', async () => {
    const res = await request(`${mock.url}/v1/status/429`, { dispatcher });
    expect(res.statusCode).toBe(429);
    expect(res.headers['x-mock-error']).toBe('yes');
    const json = (await res.body.json()) as { error: { message: string; type: string } };
    expect(json.error.type).toBe('rate_limit_error');
    expect(json.error.message).toContain('429');
  });

  it('delays headers on /slow and the body on /slow-body', async () => {
    let start = performance.now();
    const slow = await request(`${mock.url}/slow?ms=120`, { dispatcher });
    expect(performance.now() - start).toBeGreaterThanOrEqual(60);
    await slow.body.dump();

    start = performance.now();
    const slowBody = await request(`${mock.url}/slow-body?ms=150`, { dispatcher });
    const headersAt = performance.now();
    expect(slowBody.statusCode).toBe(200);
    await slowBody.body.text();
    expect(performance.now() - headersAt).toBeGreaterThanOrEqual(75);
  });

  it('streams /big with exactly the requested bytes in the a–z pattern', async () => {
    const bytes = 300_001;
    const res = await request(`${mock.url}/big?bytes=${bytes}`, { dispatcher });
    const body = Buffer.from(await res.body.arrayBuffer());
    expect(body.length).toBe(bytes);
    for (let i = 0; i < body.length; i += 997) expect(body[i]).toBe(mockBigByte(i));
    expect(body[bytes - 1]).toBe(mockBigByte(bytes - 1));
  });

  it('answers unknown routes with a 404 JSON error', async () => {
    const res = await request(`${mock.url}/nope`, { dispatcher });
    expect(res.statusCode).toBe(404);
    expect(((await res.body.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
  });

  it('reset mid-stream makes the client fail instead of hang', async () => {
    const res = await undiciFetch(`${mock.url}/reset-mid-stream`, { dispatcher });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();

    const raw = await request(`${mock.url}/openai/reset-mid-stream`, { dispatcher });
    const events: string[] = [];
    const failure = await (async () => {
      for await (const chunk of raw.body) events.push(String(chunk));
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(events.join('')).toContain('data: {"index":1');
    // A real TCP RST, not just a truncated body.
    expect(failure).toMatchObject({ code: 'ECONNRESET' });
  });

  it('keeps connections alive between requests', async () => {
    const first = await request(`${mock.url}/v1/models`, { dispatcher });
    expect(first.headers.connection).toBe('keep-alive');
    await first.body.dump();
  });

  describe('official SDKs through sdk-clients helpers', () => {
    it('openai: completion and stream, with a custom Origin', async () => {
      const openai = openaiClient({
        baseURL: `${mock.url}/v1`,
        apiKey: 'sk-test-openai',
        ca: mock.caCertPem,
        headers: { Origin: ORIGIN },
      });
      const completion = await openai.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(completion.choices[0]?.message.content).toBe(MOCK_COMPLETION_TEXT);
      expect(completion.usage?.total_tokens).toBeGreaterThan(0);

      const stream = await openai.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let chunks = 0;
      let usageSeen = false;
      for await (const chunk of stream) {
        chunks++;
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usageSeen = true;
      }
      expect(text).toBe(mockStreamText(4));
      expect(chunks).toBe(4 + 1);
      expect(usageSeen).toBe(true);

      const requests = await mock.waitForRequests(2);
      for (const rec of requests) {
        expect(rec.headers.authorization).toBe('Bearer sk-test-openai');
        expect(rec.headers.origin).toBe(ORIGIN);
        // Exactly one Origin on the wire: fetch must not have added its own next to ours.
        expect(rec.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === 'origin')).toHaveLength(1);
      }
    });

    it('openai: models list and an API error surface through the SDK', async () => {
      const openai = openaiClient({ baseURL: `${mock.url}/v1`, apiKey: 'sk-test', ca: mock.caCertPem });
      const models = await openai.models.list();
      expect(models.data.length).toBeGreaterThan(0);

      const failing = openaiClient({
        baseURL: `${mock.url}/status/429/v1`,
        apiKey: 'sk-test',
        ca: mock.caCertPem,
      });
      const err: unknown = await failing.models.list().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(OpenAI.RateLimitError);
      expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
      expect((err as InstanceType<typeof OpenAI.APIError>).message).toContain('Mock provider error');
      expect((err as InstanceType<typeof OpenAI.APIError>).headers?.get('x-mock-error')).toBe('yes');
    });

    it("openai: the SDK's documented fetchOptions.dispatcher also works with Node's global fetch", async () => {
      const openai = new OpenAI({
        apiKey: 'sk-test',
        baseURL: `${mock.url}/v1`,
        maxRetries: 0,
        // openai's type for `dispatcher` comes from Node's bundled undici-types, not the `undici` package.
        fetchOptions: { dispatcher: dispatcher as unknown as NonNullable<RequestInit['dispatcher']> },
        defaultHeaders: { Origin: ORIGIN },
      });
      const completion = await openai.chat.completions.create({ model: 'gpt-test', messages: [] });
      expect(completion.choices[0]?.message.content).toBe(MOCK_COMPLETION_TEXT);
      const [rec] = await mock.waitForRequests(1);
      expect(rec?.headers.origin).toBe(ORIGIN);
    });

    it('anthropic: message and stream, with a custom Origin and Bearer auth', async () => {
      const anthropic = anthropicClient({
        baseURL: mock.url,
        apiKey: 'sk-ant-test',
        ca: mock.caCertPem,
        headers: { Origin: ORIGIN },
      });
      const message = await anthropic.messages.create({
        model: 'claude-test',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
      });
      const block = message.content[0];
      expect(block?.type === 'text' ? block.text : undefined).toBe(MOCK_COMPLETION_TEXT);

      const stream = anthropic.messages.stream({
        model: 'claude-test',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
      });
      const deltas: string[] = [];
      stream.on('text', (delta) => deltas.push(delta));
      const final = await stream.finalMessage();
      expect(deltas.join('')).toBe(mockStreamText(4));
      expect(final.stop_reason).toBe('end_turn');
      const finalBlock = final.content[0];
      expect(finalBlock?.type === 'text' ? finalBlock.text : undefined).toBe(mockStreamText(4));

      const requests = await mock.waitForRequests(2);
      for (const rec of requests) {
        expect(rec.headers.authorization).toBe('Bearer sk-ant-test');
        expect(rec.headers['x-api-key']).toBeUndefined();
        expect(rec.headers['anthropic-version']).toBeTruthy();
        expect(rec.headers.origin).toBe(ORIGIN);
      }
    });

    it('anthropic: x-api-key auth like older SDKs', async () => {
      const anthropic = anthropicClient({
        baseURL: `${mock.url}/anthropic`,
        apiKey: 'sk-ant-old',
        ca: mock.caCertPem,
        auth: 'x-api-key',
      });
      await anthropic.messages.create({ model: 'claude-test', max_tokens: 5, messages: [] });
      const [rec] = await mock.waitForRequests(1);
      expect(rec?.path).toBe('/anthropic/v1/messages');
      expect(rec?.headers['x-api-key']).toBe('sk-ant-old');
      expect(rec?.headers.authorization).toBeUndefined();
    });
  });
});

describe('mock provider close()', () => {
  it('returns promptly with a stream open, is idempotent, and the client sees an error', async () => {
    const mock = await startMockProvider({ chunks: 1000, gapMs: 50 });
    const dispatcher = new Agent({ connect: { ca: mock.caCertPem } });
    try {
      const res = await request(`${mock.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ stream: true }),
        dispatcher,
      });
      const reading = res.body.text();
      // An idle keep-alive connection as well, which server.close() alone would wait for.
      await (await request(`${mock.url}/v1/models`, { dispatcher })).body.dump();

      const start = performance.now();
      await Promise.all([mock.close(), mock.close()]);
      expect(performance.now() - start).toBeLessThan(2000);
      await mock.close();
      await expect(reading).rejects.toThrow();
    } finally {
      await dispatcher.destroy();
    }
  });
});
