import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { MOCK_COMPLETION_TEXT, mockBigByte } from '../support/mock-provider.js';
import { dispatcher, mock, post, useMockProvider } from './mock-provider-suite.js';

describe('mock provider', () => {
  useMockProvider();

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
});
