import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { MemoryCounters } from '../../src/limits/counters.js';
import type { RequestLogRecord } from '../../src/requestlog/record.js';
import { periodWindow } from '../../src/usage/budget.js';
import type { PriceData } from '../../src/usage/prices.js';
import { databases } from '../support/databases.js';
import { until } from '../support/poll.js';
import { APP_ORIGIN, bearer, startProxyHarness, type ProxyHarness } from '../proxy/harness.js';

const PRICES: PriceData = { openai: { 'gpt-4o': { input: 2.5, output: 10 } } };
/** A chat body that names its maximum: the mock answers with fewer output tokens than this. */
const BODY = JSON.stringify({ model: 'gpt-4o', max_tokens: 60, messages: [{ role: 'user', content: 'hi' }] });
const WORST = Buffer.byteLength(BODY) + 60;
/** The probes below read this process's own counters and events: cheap, so poll often. */
const POLL = { timeoutMs: 5_000, everyMs: 10 };

const json = (token: string): Record<string, string> => ({
  ...bearer(token),
  'content-type': 'application/json',
});

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`budgets hold under concurrency (${fixture.name})`, () => {
    let h: ProxyHarness;
    const counters = new MemoryCounters();

    /** The live counter of a token's budget: reserved plus settled. */
    const spentOf = (tokenId: string, period: 'day' | 'month' | 'total' = 'day'): number => {
      const now = Date.now();
      const w = periodWindow(period, now);
      return counters.reserve(`budget:token:${tokenId}:${w.name}`, 0, Infinity, w.end, now).total;
    };
    const actual = (r: RequestLogRecord): number => (r.inputTokens ?? 0) + (r.outputTokens ?? 0);

    beforeAll(async () => {
      h = await startProxyHarness(fixture, {
        usage: { prices: PRICES, counters, defaultReservation: 1000, accountTtlMs: 0 },
        providers: () => [
          { id: 'dead', baseUrl: 'https://127.0.0.1:1', auth: { kind: 'bearer' }, builtin: false },
        ],
      });
    });
    afterAll(async () => {
      await h?.close();
      counters.close();
    });

    it('50 concurrent requests against a budget of N tokens overshoot it by less than one request', async () => {
      const budget = 10 * WORST;
      const { token, tokenId } = await h.createToken({ budget: { tokens: budget, period: 'day' } });
      const results = await Promise.all(
        Array.from({ length: 50 }, () =>
          h.send('/openai/v1/chat/completions', { method: 'POST', headers: json(token), body: BODY }),
        ),
      );
      const ok = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status === 429);
      expect(ok.length + refused.length).toBe(50);
      expect(ok.length).toBeGreaterThan(0);
      expect(refused.length).toBeGreaterThan(0);
      for (const r of refused) {
        expect(r.json.error?.code).toBe('budget_exceeded');
        expect(r.json.error?.message).toContain(`budget of ${budget} tokens per day`);
        expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
      }
      const records = await Promise.all(ok.map((r) => h.recordOf(r.headers['x-tokenproxy-request-id'])));
      const costs = records.map(actual);
      const spent = costs.reduce((a, b) => a + b, 0);
      expect(Math.min(...costs)).toBeGreaterThan(0);
      expect(spent).toBeLessThanOrEqual(budget + Math.max(...costs));
      // Every reservation was settled to the real usage: the counter is exactly what was spent.
      await until('the budget counter to settle at what was spent', () => spentOf(tokenId) === spent, POLL);
      // Refused requests never reached the provider.
      const reached = h.mock.received.filter(
        (r) => r.headers.authorization !== undefined && r.path === '/v1/chat/completions',
      );
      expect(reached.length).toBeGreaterThanOrEqual(ok.length);

      const exceeded = h.events.filter((e) => e.type === 'budget.exceeded' && e.data.token_id === tokenId);
      expect(exceeded).toHaveLength(1);
      expect(exceeded[0]?.data).toMatchObject({
        scope: 'token',
        unit: 'tokens',
        limit: budget,
        period: periodWindow('day', Date.now()).name,
      });
    });

    it('emits budget.threshold_reached once when the spend reaches 80 %', async () => {
      const { token, tokenId } = await h.createToken({ budget: { tokens: 5 * WORST, period: 'month' } });
      for (let i = 0; i < 20; i++) {
        const res = await h.send('/openai/v1/chat/completions', {
          method: 'POST',
          headers: json(token),
          body: BODY,
        });
        if (res.status === 429) break;
      }
      await until(
        "the token's budget.threshold_reached event",
        () => h.events.some((e) => e.type === 'budget.threshold_reached' && e.data.token_id === tokenId),
        POLL,
      );
      const reached = h.events.filter(
        (e) => e.type === 'budget.threshold_reached' && e.data.token_id === tokenId,
      );
      expect(reached).toHaveLength(1);
      expect(Number(reached[0]?.data.used)).toBeGreaterThanOrEqual(0.8 * 5 * WORST);
    });

    it('a request whose worst case does not fit is refused before it reaches the provider', async () => {
      const { token, tokenId } = await h.createToken({ budget: { tokens: 10, period: 'total' } });
      const before = h.mock.received.length;
      const res = await h.send('/openai/v1/chat/completions', {
        method: 'POST',
        headers: json(token),
        body: BODY,
      });
      expect(res.status).toBe(429);
      expect(res.json.error?.code).toBe('budget_exceeded');
      expect(res.json.error?.message).toMatch(/budget of 10 tokens in total .* does not reset/);
      expect(res.headers['retry-after']).toBeUndefined();
      expect(h.mock.received.length).toBe(before);
      const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
      expect(record).toMatchObject({ status: 429, errorCode: 'budget_exceeded', forwarded: false });
      expect(spentOf(tokenId, 'total')).toBe(0);
    });

    it('releases the reservation when the provider answers an error', async () => {
      const { token, tokenId } = await h.createToken({ budget: { tokens: 100_000, period: 'day' } });
      const res = await h.send('/openai/status/500', { method: 'POST', headers: json(token), body: BODY });
      expect(res.status).toBe(500);
      await h.recordOf(res.headers['x-tokenproxy-request-id']);
      expect(spentOf(tokenId)).toBe(0);
    });

    it('releases the reservation when the provider cannot be reached', async () => {
      const { token, tokenId } = await h.createToken({
        provider: 'dead',
        budget: { tokens: 100_000, period: 'day' },
      });
      const res = await h.send('/dead/v1/chat/completions', {
        method: 'POST',
        headers: json(token),
        body: BODY,
      });
      expect(res.status).toBe(502);
      await h.recordOf(res.headers['x-tokenproxy-request-id']);
      expect(spentOf(tokenId)).toBe(0);
    });

    it('releases the reservation when the client goes away before the answer', async () => {
      const { token, tokenId } = await h.createToken({ budget: { tokens: 100_000, period: 'day' } });
      const controller = new AbortController();
      const pending = request(`${h.url}/openai/slow?ms=5000`, {
        dispatcher: h.dispatcher,
        method: 'POST',
        headers: json(token),
        body: BODY,
        signal: controller.signal,
      }).catch(() => undefined);
      await until("the streamed request's reservation", () => spentOf(tokenId) > 0, POLL);
      expect(spentOf(tokenId)).toBe(WORST);
      controller.abort();
      await pending;
      await h.waitForRecord((r) => r.tokenId === tokenId && r.status === 499);
      expect(spentOf(tokenId)).toBe(0);
    });

    it('a stream that reports no usage is charged its worst case, not nothing', async () => {
      const { token, tokenId } = await h.createToken({ budget: { tokens: 3 * WORST, period: 'day' } });
      // OpenAI streams carry usage only when the request asks for it (stream_options.include_usage).
      const streamed = JSON.stringify({ ...JSON.parse(BODY), stream: true });
      const worst = Buffer.byteLength(streamed) + 60;
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await h.send('/openai/v1/chat/completions', {
          method: 'POST',
          headers: json(token),
          body: streamed,
        });
        statuses.push(res.status);
        if (res.status === 200) {
          const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
          expect(record.outputTokens).toBeNull();
        }
      }
      // Each answered stream keeps its worst case, so the budget of about three stops the fourth.
      expect(statuses.filter((s) => s === 200).length).toBe(Math.floor((3 * WORST) / worst));
      expect(statuses.at(-1)).toBe(429);
      expect(spentOf(tokenId)).toBe(statuses.filter((s) => s === 200).length * worst);
    });

    it('a whole answer that reports no usage (a model list) costs nothing; one that reports part is charged that part', async () => {
      const { token, tokenId } = await h.createToken({ budget: { tokens: 100_000, period: 'day' } });
      const list = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect(list.status).toBe(200);
      await h.recordOf(list.headers['x-tokenproxy-request-id']);
      expect(spentOf(tokenId)).toBe(0);
      // An embedding reports its input only: its output is 0, not the default reservation.
      const embedded = await h.send('/openai/v1/embeddings', {
        method: 'POST',
        headers: json(token),
        body: JSON.stringify({ model: 'text-embedding-3-small', input: 'hi' }),
      });
      expect(embedded.status).toBe(200);
      const record = await h.recordOf(embedded.headers['x-tokenproxy-request-id']);
      expect([record.inputTokens, record.outputTokens]).toEqual([8, null]);
      await until('the embedding to be settled at its input', () => spentOf(tokenId) === 8, POLL);
    });

    it('a client gone in the middle of a stream is charged its worst case', async () => {
      const { token, tokenId } = await h.createToken({ budget: { tokens: 100_000, period: 'day' } });
      const streamed = JSON.stringify({
        ...JSON.parse(BODY),
        stream: true,
        stream_options: { include_usage: true },
      });
      const worst = Buffer.byteLength(streamed) + 60;
      const controller = new AbortController();
      const res = await request(`${h.url}/openai/v1/chat/completions`, {
        dispatcher: h.dispatcher,
        method: 'POST',
        headers: { ...json(token), 'x-mock-chunks': '50', 'x-mock-gap-ms': '100' },
        body: streamed,
        signal: controller.signal,
      });
      expect(res.statusCode).toBe(200);
      // The first chunk, then leave.
      await new Promise((resolve) => res.body.once('data', resolve));
      controller.abort();
      await h.waitForRecord((r) => r.tokenId === tokenId);
      await until('the reservation to be settled', () => spentOf(tokenId) === worst, POLL);
    });

    it('a streamed body longer than the prefix is forwarded whole, and reserved with the default', async () => {
      const { token, tokenId } = await h.createToken({ budget: { tokens: 10_000_000, period: 'day' } });
      const padding = 'x'.repeat(40_000);
      const body = JSON.stringify({
        model: 'gpt-4o',
        max_tokens: 10,
        messages: [{ role: 'user', content: padding }],
      });
      const res = await h.send('/openai/echo-body', { method: 'POST', headers: json(token), body });
      expect(res.status).toBe(200);
      const received = h.mock.received.at(-1);
      expect(received?.body.toString()).toBe(body);
      await h.recordOf(res.headers['x-tokenproxy-request-id']);
      // A whole answer that is not a stream and reports no usage spent nothing we can know of: 0.
      expect(spentOf(tokenId)).toBe(0);
    });

    it("a USD budget counts cost, and charges an unlisted model at the provider's highest price", async () => {
      const { token, tokenId } = await h.createToken({ budget: { amount_usd: 0.01, period: 'day' } });
      let ok = 0;
      let spent = 0;
      for (let i = 0; i < 40; i++) {
        const res = await h.send('/openai/v1/chat/completions', {
          method: 'POST',
          headers: json(token),
          body: BODY,
        });
        if (res.status === 429) break;
        ok++;
        const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
        spent += record.costMicros ?? 0;
      }
      expect(ok).toBeGreaterThan(0);
      expect(spent).toBeLessThanOrEqual(10_000);
      await until('the budget counter to settle at what was spent', () => spentOf(tokenId) === spent, POLL);

      const other = await h.createToken({ budget: { amount_usd: 1, period: 'day' } });
      const unlisted = JSON.stringify({ model: 'gpt-secret', max_tokens: 60, messages: [] });
      const res = await h.send('/openai/v1/chat/completions', {
        method: 'POST',
        headers: json(other.token),
        body: unlisted,
      });
      const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
      expect(record.costMicros).toBeNull(); // the log says "no price" …
      const charged = Math.ceil((record.inputTokens ?? 0) * 2.5 + (record.outputTokens ?? 0) * 10);
      // … the budget still counts it
      await until(
        'the unpriced request to be charged to the budget',
        () => spentOf(other.tokenId) === charged,
        POLL,
      );
    });

    it("an account budget caps the sum of the account's tokens, and can be removed", async () => {
      const a = await h.createToken({});
      const b = await h.createToken({});
      const set = await h.apiCall('PATCH', '/v1/account', { budget: { tokens: 3 * WORST, period: 'month' } });
      expect(set.status).toBe(200);
      expect((set.body as { budget: unknown }).budget).toEqual({ tokens: 3 * WORST, period: 'month' });
      const statuses: number[] = [];
      let last: Awaited<ReturnType<ProxyHarness['send']>> | undefined;
      for (let i = 0; i < 6; i++) {
        last = await h.send('/openai/v1/chat/completions', {
          method: 'POST',
          headers: json(i % 2 === 0 ? a.token : b.token),
          body: BODY,
        });
        statuses.push(last.status);
      }
      expect(statuses).toContain(200);
      expect(statuses.at(-1)).toBe(429);
      expect(last?.json.error?.message).toContain("The account's budget");
      const cleared = await h.apiCall('PATCH', '/v1/account', { budget: null });
      expect((cleared.body as { budget: unknown }).budget).toBeNull();
      const after = await h.send('/openai/v1/chat/completions', {
        method: 'POST',
        headers: json(a.token),
        body: BODY,
      });
      expect(after.status).toBe(200);
    });
  });
}

describe.skipIf(!databases[0]?.available)('budgets in the API', () => {
  let h: ProxyHarness;
  beforeAll(async () => {
    h = await startProxyHarness(databases[0] as (typeof databases)[number]);
  });
  afterAll(async () => {
    await h?.close();
  });

  const BAD: readonly [unknown, RegExp][] = [
    [{ amount_usd: 5, tokens: 3, period: 'day' }, /exactly one of "amount_usd" \(USD\) and "tokens"/],
    [{ period: 'day' }, /exactly one of/],
    [{ tokens: 1.5, period: 'day' }, /budget/],
    [{ tokens: 5, period: 'week' }, /budget/],
    [{ amount_usd: 0, period: 'month' }, /budget/],
    [{ tokens: 5, period: 'day', extra: 1 }, /budget/],
  ];
  for (const [budget, message] of BAD) {
    it(`refuses ${JSON.stringify(budget)} naming the field`, async () => {
      const res = await h.apiCall('POST', '/v1/tokens', {
        name: 't',
        provider: 'openai',
        allowed_hosts: ['app.example.com'],
        real_key: 'sk-test-budget-0000000000',
        budget,
      });
      expect(res.status).toBe(400);
      const error = (res.body as { error: { code: string; message: string } }).error;
      expect(error.code).toMatch(/invalid_parameter|unknown_parameter/);
      expect(error.message).toMatch(message);
    });
  }

  it('sets, shows, changes and removes a token budget', async () => {
    const { tokenId } = await h.createToken({ budget: { amount_usd: 20, period: 'month' } });
    const got = await h.apiCall('GET', `/v1/tokens/${tokenId}`);
    expect((got.body as { budget: unknown }).budget).toEqual({ amount_usd: 20, period: 'month' });
    const changed = await h.apiCall('PATCH', `/v1/tokens/${tokenId}`, {
      budget: { tokens: 2_000_000, period: 'day' },
    });
    expect((changed.body as { budget: unknown }).budget).toEqual({ tokens: 2_000_000, period: 'day' });
    const removed = await h.apiCall('PATCH', `/v1/tokens/${tokenId}`, { budget: null });
    expect((removed.body as { budget: unknown }).budget).toBeNull();
    const origin = APP_ORIGIN;
    expect(origin).toContain('https://');
  });
});
