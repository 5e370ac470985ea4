import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { anthropicClient, openaiClient } from '../support/sdk-clients.js';
import { databases } from '../support/databases.js';
import { MOCK_COMPLETION_TEXT, mockStreamText, type ReceivedRequest } from '../support/mock-provider.js';
import { APP_ORIGIN, bearer, startProxyHarness, type ProxyHarness } from './harness.js';

const REAL_KEY = 'sk-proj-REALKEY-integration-7f3a9c1e5b2d8f4a6c0e';
const ANTHROPIC_KEY = 'sk-ant-api03-REALKEY-integration-44aa88cc00ee';

function headerText(r: ReceivedRequest): string {
  return r.rawHeaders.join('\n');
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`proxy end to end (${fixture.name})`, () => {
    let h: ProxyHarness;
    let openaiToken: string;
    let openaiTokenId: string;
    let anthropicToken: string;

    beforeAll(async () => {
      h = await startProxyHarness(fixture);
      ({ token: openaiToken, tokenId: openaiTokenId } = await h.createToken({ realKey: REAL_KEY }));
      ({ token: anthropicToken } = await h.createToken({ provider: 'anthropic', realKey: ANTHROPIC_KEY }));
    });
    afterAll(async () => {
      await h.close();
    });
    beforeEach(() => {
      h.mock.reset();
      h.records.length = 0;
    });

    function expectClean(r: ReceivedRequest, token: string): void {
      const text = headerText(r);
      expect(text).not.toContain(token);
      expect(text).not.toContain('svc_hb_');
      expect(r.headers.origin).toBeUndefined();
      expect(r.headers.referer).toBeUndefined();
      expect(r.body.toString()).not.toContain(token);
    }

    it('OpenAI SDK, non-streaming: real key upstream, token and Origin gone, answer unchanged', async () => {
      const client = openaiClient({
        baseURL: `${h.url}/openai/v1`,
        apiKey: openaiToken,
        ca: h.ca,
        headers: { Origin: APP_ORIGIN },
      });
      const completion = await client.chat.completions.create({
        model: 'gpt-mock-1',
        messages: [{ role: 'user', content: 'hello' }],
      });
      expect(completion.choices[0]?.message.content).toBe(MOCK_COMPLETION_TEXT);
      const [received] = await h.mock.waitForRequests(1);
      expect(received?.path).toBe('/v1/chat/completions');
      expect(received?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
      expect(received?.headers.host).toBe(`127.0.0.1:${h.mock.port}`);
      expectClean(received as ReceivedRequest, openaiToken);
      expect(JSON.parse((received as ReceivedRequest).body.toString())).toEqual({
        model: 'gpt-mock-1',
        messages: [{ role: 'user', content: 'hello' }],
      });

      const record = await h.waitForRecord((r) => r.path === '/openai/v1/chat/completions');
      expect(record).toMatchObject({
        tokenId: openaiTokenId,
        accountId: h.accountId,
        provider: 'openai',
        origin: APP_ORIGIN,
        ip: '127.0.0.1',
        pop: 'test-pop',
        path: '/openai/v1/chat/completions',
        status: 200,
        authorized: true,
        forwarded: true,
      });
      expect(record.latencyMs).toBeGreaterThanOrEqual(0);
      expect(Number.isInteger(record.latencyMs)).toBe(true);
    });

    it('OpenAI SDK, streaming: chunks arrive while the provider is still generating', async () => {
      const client = openaiClient({
        baseURL: `${h.url}/openai/v1`,
        apiKey: openaiToken,
        ca: h.ca,
        headers: { Origin: APP_ORIGIN, 'x-mock-chunks': '5', 'x-mock-gap-ms': '80' },
      });
      const stream = await client.chat.completions.create({
        model: 'gpt-mock-1',
        messages: [{ role: 'user', content: 'stream please' }],
        stream: true,
      });
      const arrivals: number[] = [];
      let text = '';
      for await (const chunk of stream) {
        arrivals.push(Date.now());
        text += chunk.choices[0]?.delta.content ?? '';
      }
      expect(text).toBe(mockStreamText(5));
      expect(arrivals.length).toBe(5);
      // Spread out in time: the proxy did not wait for the end before forwarding.
      expect((arrivals.at(-1) as number) - (arrivals[0] as number)).toBeGreaterThanOrEqual(4 * 80 * 0.8);
      const [received] = await h.mock.waitForRequests(1);
      expect(received?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
      expectClean(received as ReceivedRequest, openaiToken);
    });

    it('the same path, query and body bytes reach the provider', async () => {
      const body = Buffer.from('{"exact":  "bytes",\n "kept": [1,2,3]}');
      const res = await h.send('/openai/v1/echo-body?b=2&a=1&a=%20x', {
        method: 'POST',
        headers: { ...bearer(openaiToken), 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(200);
      expect(res.text).toBe(body.toString());
      const [received] = await h.mock.waitForRequests(1);
      expect(received?.path).toBe('/v1/echo-body?b=2&a=1&a=%20x');
      expect(received?.method).toBe('POST');
      expect(received?.body.equals(body)).toBe(true);
      const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
      expect(record.path).toBe('/openai/v1/echo-body');
    });

    for (const auth of ['bearer', 'x-api-key'] as const) {
      it(`Anthropic SDK (${auth}), non-streaming and streaming: real key in x-api-key`, async () => {
        const client = anthropicClient({
          baseURL: `${h.url}/anthropic`,
          apiKey: anthropicToken,
          ca: h.ca,
          auth,
          headers: { Origin: APP_ORIGIN },
        });
        const message = await client.messages.create({
          model: 'claude-mock-1',
          max_tokens: 64,
          messages: [{ role: 'user', content: 'hi' }],
        });
        expect(message.content[0]).toMatchObject({ type: 'text', text: MOCK_COMPLETION_TEXT });

        const stream = client.messages.stream({
          model: 'claude-mock-1',
          max_tokens: 64,
          messages: [{ role: 'user', content: 'stream' }],
        });
        const arrivals: number[] = [];
        stream.on('text', () => arrivals.push(Date.now()));
        expect(await stream.finalText()).toBe(mockStreamText(5));
        expect((arrivals.at(-1) as number) - (arrivals[0] as number)).toBeGreaterThanOrEqual(4 * 60 * 0.8);

        const received = await h.mock.waitForRequests(2);
        for (const r of received) {
          expect(r.path).toBe('/v1/messages');
          expect(r.headers['x-api-key']).toBe(ANTHROPIC_KEY);
          expect(r.headers.authorization).toBeUndefined();
          expect(r.headers['anthropic-version']).toBeDefined();
          expectClean(r, anthropicToken);
        }
      });
    }

    it('passes a provider error through unchanged', async () => {
      const res = await h.send('/openai/v1/status/429', { headers: bearer(openaiToken) });
      expect(res.status).toBe(429);
      expect(res.headers['x-mock-error']).toBe('yes');
      expect(res.json).toEqual({
        error: { message: 'Mock provider error with status 429', type: 'rate_limit_error' },
      });
      expect(res.headers['x-tokenproxy-request-id']).toMatch(/^req_/);
      const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
      expect(record).toMatchObject({ status: 429, authorized: true, forwarded: true });
    });

    it('a revoke through the API applies to the very next request', async () => {
      const { token, tokenId } = await h.createToken({ realKey: REAL_KEY });
      expect((await h.send('/openai/v1/models', { headers: bearer(token) })).status).toBe(200);
      expect((await h.apiCall('DELETE', `/v1/tokens/${tokenId}`)).status).toBe(200);
      const res = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect(res.status).toBe(401);
      expect(res.json.error?.code).toBe('token_revoked');
    });

    it('a key rotation applies to the very next request; a key deletion revokes', async () => {
      const { token, keyId } = await h.createToken({ realKey: 'sk-before-rotation-1111111111111111' });
      await h.send('/openai/v1/echo-auth', { headers: bearer(token) });
      const rotated = await h.apiCall('POST', `/v1/keys/${keyId}/rotate`, {
        real_key: 'sk-after-rotation-22222222222222222',
      });
      expect(rotated.status).toBe(200);
      await h.send('/openai/v1/echo-auth', { headers: bearer(token) });
      const received = await h.mock.waitForRequests(2);
      expect(received[0]?.headers.authorization).toBe('Bearer sk-before-rotation-1111111111111111');
      expect(received[1]?.headers.authorization).toBe('Bearer sk-after-rotation-22222222222222222');

      expect((await h.apiCall('DELETE', `/v1/keys/${keyId}`)).status).toBe(200);
      const res = await h.send('/openai/v1/echo-auth', { headers: bearer(token) });
      expect(res.json.error?.code).toBe('token_revoked');
    });
  });
}
