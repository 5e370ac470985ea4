import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { MOCK_COMPLETION_TEXT, mockStreamText } from '../support/mock-provider.js';
import { anthropicClient, openaiClient } from '../support/sdk-clients.js';
import { dispatcher, mock, useMockProvider } from './mock-provider-suite.js';

const ORIGIN = 'https://app.example.com';

describe('mock provider', () => {
  useMockProvider();

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
