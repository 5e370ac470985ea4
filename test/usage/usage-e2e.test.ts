import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { createLogger } from '../../src/observability/logger.js';
import { createRequestLogWriter } from '../../src/requestlog/batch-writer.js';
import type { RequestLogRecord } from '../../src/requestlog/record.js';
import type { PriceData } from '../../src/usage/prices.js';
import { databases } from '../support/databases.js';
import { MOCK_USAGE_ANSWERS } from '../support/mock-provider.js';
import { bearer, startProxyHarness, type ProxyHarness } from '../proxy/harness.js';

const PRICES: PriceData = {
  openai: { 'gpt-4o': { input: 2.5, output: 10 }, 'gpt-4o-mini': { input: 0.15, output: 0.6 } },
  anthropic: { 'claude-sonnet-4-5': { input: 3, output: 15 }, 'claude-haiku-4-5': { input: 1, output: 5 } },
};

/** Where each canned answer is cut: around every usage key and the model, and at the ends. */
function cutsOf(body: string): number[][] {
  const cuts = new Set<number>([1, body.length - 1]);
  for (const needle of ['_tokens"', '"model', 'usage', ':']) {
    let at = body.indexOf(needle);
    while (at !== -1) {
      for (const d of [-2, 0, 1, 3, needle.length]) cuts.add(at + d);
      at = body.indexOf(needle, at + 1);
    }
  }
  const single = [...cuts].filter((n) => n > 0 && n < body.length).sort((a, b) => a - b);
  // One cut per request, and one request cut everywhere at once (many small pieces).
  return [[], ...single.map((n) => [n]), single];
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`usage per request, end to end (${fixture.name})`, () => {
    let h: ProxyHarness;
    let openaiToken: string;
    let openaiTokenId: string;
    let anthropicToken: string;

    beforeAll(async () => {
      h = await startProxyHarness(fixture, { usage: { prices: PRICES } });
      ({ token: openaiToken, tokenId: openaiTokenId } = await h.createToken({ provider: 'openai' }));
      ({ token: anthropicToken } = await h.createToken({ provider: 'anthropic' }));
    });
    afterAll(async () => {
      await h?.close();
    });

    for (const [shape, answer] of Object.entries(MOCK_USAGE_ANSWERS)) {
      const provider = shape.startsWith('openai') ? 'openai' : 'anthropic';
      it(`${shape}: counts and model at every cut, bytes to the caller unchanged`, async () => {
        const token = provider === 'openai' ? openaiToken : anthropicToken;
        const price = provider === 'openai' ? PRICES.openai : PRICES.anthropic;
        const family = answer.model.replace(/-\d{4}-\d{2}-\d{2}$|-\d{8}$/, '');
        const p = price?.[family];
        expect(p).toBeDefined();
        const cost = Math.ceil(answer.inputTokens * (p?.input ?? 0) + answer.outputTokens * (p?.output ?? 0));
        for (const cuts of cutsOf(answer.body)) {
          const res = await h.send(`/${provider}/usage-split?shape=${shape}&at=${cuts.join(',')}`, {
            headers: bearer(token),
          });
          expect(res.status).toBe(200);
          expect(res.text, `cut at ${cuts.join(',')}`).toBe(answer.body);
          const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
          expect(
            {
              model: record.model,
              in: record.inputTokens,
              out: record.outputTokens,
              cost: record.costMicros,
            },
            `cut at ${cuts.join(',')}`,
          ).toEqual({ model: answer.model, in: answer.inputTokens, out: answer.outputTokens, cost });
        }
      });
    }

    it('the official answers of the mock (chat JSON, SSE with include_usage, Anthropic SSE) are counted', async () => {
      const chat = await h.send('/openai/v1/chat/completions', {
        method: 'POST',
        headers: { ...bearer(openaiToken), 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
      });
      const chatRecord = await h.recordOf(chat.headers['x-tokenproxy-request-id']);
      const said = chat.json as { usage: { prompt_tokens: number; completion_tokens: number } };
      expect(chatRecord).toMatchObject({
        model: 'gpt-4o',
        inputTokens: said.usage.prompt_tokens,
        outputTokens: said.usage.completion_tokens,
        costMicros: Math.ceil(said.usage.prompt_tokens * 2.5 + said.usage.completion_tokens * 10),
      });

      const stream = await h.send('/openai/v1/chat/completions', {
        method: 'POST',
        headers: { ...bearer(openaiToken), 'content-type': 'application/json', 'x-mock-chunks': '3' },
        body: JSON.stringify({
          model: 'unlisted-model',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const streamRecord = await h.recordOf(stream.headers['x-tokenproxy-request-id']);
      // Unknown models count tokens but no cost.
      expect(streamRecord).toMatchObject({
        model: 'unlisted-model',
        inputTokens: 10,
        outputTokens: 3,
        costMicros: null,
      });

      const messages = await h.send('/anthropic/v1/messages', {
        method: 'POST',
        headers: {
          'x-api-key': anthropicToken,
          origin: 'https://app.example.com',
          'content-type': 'application/json',
          'x-mock-chunks': '4',
        },
        body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, stream: true, messages: [] }),
      });
      expect(messages.status).toBe(200);
      const messagesRecord = await h.recordOf(messages.headers['x-tokenproxy-request-id']);
      expect(messagesRecord.model).toBe('claude-sonnet-4-5');
      expect(messagesRecord.outputTokens).toBe(4);
      expect(messagesRecord.inputTokens).toBeGreaterThan(0);
    });

    it('an answer without usage records nulls', async () => {
      const res = await h.send('/openai/v1/models', { headers: bearer(openaiToken) });
      expect(res.status).toBe(200);
      const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
      expect(record).toMatchObject({ model: null, inputTokens: null, outputTokens: null, costMicros: null });
    });

    it('the batch writer stores the counts: GET /v1/logs and the per-model rollups', async () => {
      const before = h.records.length;
      const res = await h.send('/openai/usage-split?shape=openai-json&at=100', {
        headers: bearer(openaiToken),
      });
      expect(res.status).toBe(200);
      await h.waitForRecords(before + 1);
      const writer = createRequestLogWriter({
        store: h.db.store,
        logger: createLogger('silent'),
        flushIntervalMs: 10,
      });
      const mine = h.records.filter((r: RequestLogRecord) => r.tokenId === openaiTokenId);
      for (const r of mine) writer.write(r);
      await writer.close();

      const logs = await h.apiCall('GET', `/v1/logs?token_id=${openaiTokenId}&limit=100`);
      expect(logs.status).toBe(200);
      const items = (logs.body as { data: Record<string, unknown>[] }).data;
      const item = items.find((i) => i.request_id === res.headers['x-tokenproxy-request-id']);
      expect(item).toMatchObject({
        model: 'gpt-4o-2024-08-06',
        input_tokens: 1200,
        output_tokens: 340,
        cost_micros: Math.ceil(1200 * 2.5 + 340 * 10),
      });

      const rows = await h.db.store.usageModelRollups.range(
        h.accountId,
        '2000-01-01',
        '2100-01-01',
        openaiTokenId,
      );
      const forwarded = mine.filter((r) => r.forwarded);
      const sum = (f: (r: RequestLogRecord) => number | null) =>
        forwarded.reduce((n, r) => n + (f(r) ?? 0), 0);
      expect(rows.reduce((n, r) => n + r.requests, 0)).toBe(forwarded.length);
      expect(rows.reduce((n, r) => n + r.inputTokens, 0)).toBe(sum((r) => r.inputTokens));
      expect(rows.reduce((n, r) => n + r.outputTokens, 0)).toBe(sum((r) => r.outputTokens));
      expect(rows.reduce((n, r) => n + r.costMicros, 0)).toBe(sum((r) => r.costMicros));
      const dated = rows.filter((r) => r.model === 'gpt-4o-2024-08-06');
      expect(dated.reduce((n, r) => n + r.inputTokens, 0)).toBe(
        forwarded
          .filter((r) => r.model === 'gpt-4o-2024-08-06')
          .reduce((n, r) => n + (r.inputTokens ?? 0), 0),
      );
      const spent = await h.db.store.usageModelRollups.spent(h.accountId, openaiTokenId, '2000-01-01');
      expect(spent.costMicros).toBe(sum((r) => r.costMicros));

      // GET /v1/usage: by token and model over time, and spend against a budget.
      await h.apiCall('PATCH', `/v1/tokens/${openaiTokenId}`, { budget: { amount_usd: 50, period: 'day' } });
      const usage = await h.apiCall('GET', '/v1/usage?window=24h&bucket=1h');
      expect(usage.status).toBe(200);
      const body = usage.body as {
        spend: {
          cost_micros: number;
          by_token: { token_id: string; cost_micros: number; input_tokens: number }[];
          by_model: { model: string | null; requests: number }[];
          buckets: { cost_micros: number }[];
        };
        budgets: {
          scope: string;
          token_id: string;
          used: number;
          limit: number;
          unit: string;
          fraction: number;
        }[];
      };
      const mineSpend = body.spend.by_token.find((t) => t.token_id === openaiTokenId);
      expect(mineSpend).toMatchObject({
        cost_micros: sum((r) => r.costMicros),
        input_tokens: sum((r) => r.inputTokens),
      });
      expect(body.spend.buckets.reduce((n, b) => n + b.cost_micros, 0)).toBe(body.spend.cost_micros);
      expect(body.spend.by_model.find((m) => m.model === 'gpt-4o-2024-08-06')?.requests).toBe(
        forwarded.filter((r) => r.model === 'gpt-4o-2024-08-06').length,
      );
      expect(body.budgets).toContainEqual(
        expect.objectContaining({
          scope: 'token',
          token_id: openaiTokenId,
          unit: 'usd',
          limit: 50,
          used: sum((r) => r.costMicros) / 1_000_000,
        }),
      );
    });

    it('a client that goes away mid-stream still gets a record, with what was said so far', async () => {
      const controller = new AbortController();
      const res = await request(`${h.url}/anthropic/v1/messages`, {
        dispatcher: h.dispatcher,
        method: 'POST',
        headers: {
          'x-api-key': anthropicToken,
          origin: 'https://app.example.com',
          'content-type': 'application/json',
          'x-mock-chunks': '50',
        },
        body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, stream: true, messages: [] }),
        signal: controller.signal,
      });
      const id = res.headers['x-tokenproxy-request-id'];
      for await (const chunk of res.body) {
        if (String(chunk).includes('content_block_delta')) break;
      }
      controller.abort();
      const record = await h.recordOf(id);
      expect(record.status).toBe(200);
      expect(record.model).toBe('claude-sonnet-4-5');
      expect(record.inputTokens).toBeGreaterThan(0);
    });
  });
}
