import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { anthropicClient, openaiClient } from '../support/sdk-clients.js';
import { startProxyHarness, type ProxyHarness } from './harness.js';

/** The error a call throws (the test fails if it does not throw). */
async function thrown(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to throw');
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`proxy errors as the provider SDKs show them (${fixture.name})`, () => {
    let h: ProxyHarness;

    beforeAll(async () => {
      h = await startProxyHarness(fixture);
    });
    afterAll(async () => {
      await h?.close();
    });

    it('@anthropic-ai/sdk: a PermissionDeniedError with our message and request id', async () => {
      const { token } = await h.createToken({ provider: 'anthropic' });
      // A server-side caller that sends no Origin: the common mistake the message explains.
      const client = anthropicClient({ baseURL: `${h.url}/anthropic`, apiKey: token, ca: h.ca });
      const err = await thrown(() =>
        client.messages.create({
          model: 'claude-mock-1',
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      );
      expect(err).toBeInstanceOf(Anthropic.PermissionDeniedError);
      const e = err as InstanceType<typeof Anthropic.PermissionDeniedError>;
      expect(e.status).toBe(403);
      expect(e.message).toContain('This token may not be used from this origin');
      expect(e.message).toContain('must send an Origin header');
      expect(e.requestID).toMatch(/^req_/);
      const rec = await h.recordOf(e.requestID);
      expect(rec).toMatchObject({ status: 403, errorCode: 'origin_not_allowed' });
    });

    it('openai: a PermissionDeniedError with our message, code and request id', async () => {
      const { token } = await h.createToken({ provider: 'openai' });
      const client = openaiClient({
        baseURL: `${h.url}/openai/v1`,
        apiKey: token,
        ca: h.ca,
        headers: { Origin: 'https://evil.example' },
      });
      const err = await thrown(() => client.models.list());
      expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
      const e = err as InstanceType<typeof OpenAI.PermissionDeniedError>;
      expect(e.status).toBe(403);
      expect(e.message).toBe('403 This token may not be used from this origin.');
      expect(e.code).toBe('origin_not_allowed');
      expect(e.requestID).toMatch(/^req_/);
      const rec = await h.recordOf(e.requestID);
      expect(rec).toMatchObject({ status: 403, errorCode: 'origin_not_allowed' });
    });
  });
}

describe('refusals a retry cannot fix: the SDKs do not retry them', () => {
  const sqlite = databases.find((d) => d.name === 'sqlite');
  let h: ProxyHarness;
  beforeAll(async () => {
    h = await startProxyHarness(sqlite as (typeof databases)[number], { limits: {} });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('openai with retries on: an IP in backoff gets its 429 at once, one request per call', async () => {
    const { token, tokenId } = await h.createToken({ provider: 'openai' });
    const client = openaiClient({
      baseURL: `${h.url}/openai/v1`,
      apiKey: token,
      ca: h.ca,
      headers: { Origin: 'https://evil.example' },
      maxRetries: 2,
    });
    const first = await thrown(() => client.models.list());
    expect((first as InstanceType<typeof OpenAI.APIError>).status).toBe(403);
    const started = Date.now();
    const second = await thrown(() => client.models.list());
    expect(second).toBeInstanceOf(OpenAI.RateLimitError);
    expect((second as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('ip_backoff');
    // Retried, it would have waited out Retry-After (1-2 s) twice, each retry deepening the backoff.
    expect(Date.now() - started).toBeLessThan(900);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(h.records.filter((r) => r.tokenId === tokenId)).toHaveLength(2);
  });
});
