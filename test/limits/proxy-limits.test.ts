import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { APP_ORIGIN, bearer, startProxyHarness, type ProxyHarness } from '../proxy/harness.js';
import { countBy, pool, storedAnomalies, TRUST_LOOPBACK } from './helpers.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`rate limits (${fixture.name})`, () => {
    let h: ProxyHarness;
    beforeAll(async () => {
      h = await startProxyHarness(fixture, { limits: {} });
    });
    afterAll(async () => {
      await h?.close();
    });
    beforeEach(() => h.mock.reset());

    it('is exact under concurrency: 200 requests at once against 50 → 50 forwarded, 150 refused', async () => {
      const { token } = await h.createToken({ rateLimit: { requests: 50, window: '1h' } });
      const answers = await Promise.all(
        Array.from({ length: 200 }, () => h.send('/openai/v1/models', { headers: bearer(token) })),
      );
      expect(countBy(answers, (a) => String(a.status))).toEqual({ '200': 50, '429': 150 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(h.mock.received).toHaveLength(50);
      const refused = answers.filter((a) => a.status === 429);
      for (const a of refused) {
        expect(a.json.error?.code).toBe('rate_limited');
        expect(a.headers['ratelimit-limit']).toBe('50');
        expect(a.headers['ratelimit-remaining']).toBe('0');
        expect(Number(a.headers['retry-after'])).toBeGreaterThan(3500);
        expect(a.headers['ratelimit-reset']).toBe(a.headers['retry-after']);
      }
      const remaining = answers
        .filter((a) => a.status === 200)
        .map((a) => Number(a.headers['ratelimit-remaining']))
        .sort((x, y) => x - y);
      expect(remaining).toEqual(Array.from({ length: 50 }, (_, i) => i));
      const rec = await h.recordOf(refused[0]?.headers['x-tokenproxy-request-id']);
      expect(rec).toMatchObject({ status: 429, authorized: true, forwarded: false });
    });

    it('authorized answers carry RateLimit-* (exposed to browsers); tokens without a limit do not', async () => {
      const { token } = await h.createToken({ rateLimit: { requests: 3, window: '10 seconds' } });
      const ok = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect(ok.status).toBe(200);
      expect([ok.headers['ratelimit-limit'], ok.headers['ratelimit-remaining']]).toEqual(['3', '2']);
      expect(Number(ok.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
      expect(Number(ok.headers['ratelimit-reset'])).toBeLessThanOrEqual(10);
      expect(String(ok.headers['access-control-expose-headers'])).toContain('RateLimit-Remaining');
      const { token: free } = await h.createToken({});
      const plain = await h.send('/openai/v1/models', { headers: bearer(free) });
      expect(plain.status).toBe(200);
      expect(plain.headers['ratelimit-limit']).toBeUndefined();
    });

    it('an edited limit keeps the window under way and its count: tightening holds at once', async () => {
      const { token, tokenId } = await h.createToken({ rateLimit: { requests: 5, window: '1h' } });
      const send = async (n: number) =>
        countBy(
          await Promise.all(
            Array.from({ length: n }, () => h.send('/openai/v1/models', { headers: bearer(token) })),
          ),
          (a) => String(a.status),
        );
      const limit = async (requests: number, window: string) =>
        expect(
          (await h.apiCall('PATCH', `/v1/tokens/${tokenId}`, { rate_limit: { requests, window } })).status,
        ).toBe(200);
      expect(await send(4)).toEqual({ '200': 4 });
      // 3 an hour, with 4 made: nothing more this hour (a fresh allowance of 3 before).
      await limit(3, '1h');
      expect(await send(2)).toEqual({ '429': 2 });
      // Loosened to 10: the 6 made so far count.
      await limit(10, '1h');
      const last = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect([last.status, last.headers['ratelimit-remaining']]).toEqual([200, '3']);
      // Another window length applies from the next window: this one still ends within the hour.
      await limit(7, '1m');
      const refused = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3500);
    });

    it('an unauthorized request is refused before the rate limit and does not use it up', async () => {
      const { token } = await h.createToken({ rateLimit: { requests: 1, window: '1h' } });
      const bad = await h.send('/openai/v1/models', { headers: bearer(token, 'https://other.example.org') });
      expect(bad.status).toBe(403);
      expect((await h.send('/openai/v1/models', { headers: bearer(token) })).status).toBe(200);
      expect((await h.send('/openai/v1/models', { headers: bearer(token) })).status).toBe(429);
    });
  });

  describe.skipIf(!fixture.available)(`plan quotas (${fixture.name})`, () => {
    let h: ProxyHarness;
    beforeAll(async () => {
      h = await startProxyHarness(fixture, {
        accountPlan: 'free',
        limits: { plans: { free: { activeTokens: 3, requestsPerMonth: 10 } } },
      });
    });
    afterAll(async () => {
      await h?.close();
    });

    it('counts from the stored usage, emits quota.threshold_reached once at 80%, refuses at 100%', async () => {
      const { token, tokenId } = await h.createToken({});
      const now = new Date();
      const period = now.toISOString().slice(0, 7);
      // 5 requests already counted by the store this month (e.g. before a restart).
      await h.db.store.tokens.recordUsage([
        { tokenId, accountId: h.accountId, count: 5, lastUsedAt: now.toISOString() },
      ]);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        statuses.push((await h.send('/openai/v1/models', { headers: bearer(token) })).status);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      expect(h.events).toEqual([
        {
          accountId: h.accountId,
          type: 'quota.threshold_reached',
          data: { plan: 'free', limit: 10, used: 8, period },
        },
      ]);
      const refused = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect(refused.status).toBe(429);
      expect(refused.json.error?.code).toBe('quota_exceeded');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      // The message names the limit and the reset date: the first day of next month, UTC.
      const reset = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
      expect(refused.json.error?.message).toBe(
        `The account's monthly plan quota of 10 requests is used up; it resets on ${reset}.`,
      );
      const rec = await h.recordOf(refused.headers['x-tokenproxy-request-id']);
      expect(rec).toMatchObject({ status: 429, authorized: true, forwarded: false });
      // Other tokens of the account share the quota; no second threshold event.
      const { token: second } = await h.createToken({});
      expect((await h.send('/openai/v1/models', { headers: bearer(second) })).json.error?.code).toBe(
        'quota_exceeded',
      );
      expect(h.events.filter((e) => e.type === 'quota.threshold_reached')).toHaveLength(1);
    });
  });

  describe.skipIf(!fixture.available)(`only forwarded requests use the plan quota (${fixture.name})`, () => {
    let h: ProxyHarness;
    beforeAll(async () => {
      h = await startProxyHarness(fixture, {
        accountPlan: 'free',
        limits: { plans: { free: { activeTokens: 3, requestsPerMonth: 5 } } },
        usage: { defaultReservation: 1000 },
        providers: () => [
          { id: 'dead', baseUrl: 'https://127.0.0.1:1', auth: { kind: 'bearer' }, builtin: false },
        ],
      });
    });
    afterAll(async () => {
      await h?.close();
    });

    it('refused by a budget, or sent to a provider that cannot be reached: the quota is left as it was', async () => {
      const chat = (token: string, provider = 'openai') =>
        h.send(`/${provider}/v1/chat/completions`, {
          method: 'POST',
          headers: { ...bearer(token), 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-4o', max_tokens: 50, messages: [] }),
        });
      // A budget smaller than any request's worst case: every request is refused by it.
      const { token: tight } = await h.createToken({ budget: { tokens: 10, period: 'day' } });
      for (let i = 0; i < 8; i++) expect((await chat(tight)).json.error?.code).toBe('budget_exceeded');
      const { token: dead } = await h.createToken({ provider: 'dead' });
      for (let i = 0; i < 8; i++)
        expect((await chat(dead, 'dead')).json.error?.code).toBe('upstream_unreachable');
      const unreachable = await chat(dead, 'dead');
      const record = await h.recordOf(unreachable.headers['x-tokenproxy-request-id']);
      expect(record).toMatchObject({ status: 502, forwarded: false, errorCode: 'upstream_unreachable' });

      // The plan's 5 requests are all still there, and the 6th is refused.
      const { token } = await h.createToken({});
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await chat(token)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      const thresholds = h.events.filter((e) => e.type === 'quota.threshold_reached');
      expect(thresholds.map((e) => e.data.used)).toEqual([4]);
    });
  });

  describe.skipIf(!fixture.available)(`unlimited plans (${fixture.name})`, () => {
    let h: ProxyHarness;
    beforeAll(async () => {
      h = await startProxyHarness(fixture, {
        accountPlan: 'unlimited',
        limits: { plans: { free: { activeTokens: 3, requestsPerMonth: 1 } } },
      });
    });
    afterAll(async () => {
      await h?.close();
    });

    it('a plan with no request limit is never blocked', async () => {
      const { token } = await h.createToken({});
      const statuses = await pool(
        30,
        10,
        async () => (await h.send('/openai/v1/models', { headers: bearer(token) })).status,
      );
      expect(countBy(statuses, String)).toEqual({ '200': 30 });
      expect(h.events).toEqual([]);
    });
  });

  describe.skipIf(!fixture.available)(`IP backoff and the anomaly log (${fixture.name})`, () => {
    let h: ProxyHarness;
    beforeAll(async () => {
      h = await startProxyHarness(fixture, { limits: {} });
    });
    afterAll(async () => {
      await h?.close();
    });

    it("a revoked token's use is no anomaly entry, also once its IP is in backoff", async () => {
      const { token, tokenId } = await h.createToken({});
      expect((await h.apiCall('DELETE', `/v1/tokens/${tokenId}`)).status).toBe(200);
      const first = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect(first.json.error?.code).toBe('token_revoked');
      const again = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect(again.json.error?.code).toBe('ip_backoff');
      // An entry reading "ip_backoff" for it would say nothing of why, and the first refusal has none.
      expect(await storedAnomalies(h, h.db.store, tokenId)).toEqual([]);
    });
  });

  describe.skipIf(!fixture.available)(`the country header from outside trust_proxy (${fixture.name})`, () => {
    let h: ProxyHarness;
    beforeAll(async () => {
      // The edge is another address: the test's loopback connections are clients, not the edge.
      h = await startProxyHarness(fixture, { config: { trustProxy: ['192.0.2.1'] }, limits: {} });
    });
    afterAll(async () => {
      await h?.close();
    });

    it("is the client's own claim: the record has no country from it", async () => {
      const { token } = await h.createToken({});
      const res = await h.send('/openai/v1/models', { headers: { ...bearer(token), 'cf-ipcountry': 'KP' } });
      expect(res.status).toBe(200);
      const record = await h.recordOf(String(res.headers['x-tokenproxy-request-id']));
      expect(record).toMatchObject({ ip: '127.0.0.1', country: null });
    });
  });

  describe.skipIf(!fixture.available)(`anomalies on authorized traffic (${fixture.name})`, () => {
    let h: ProxyHarness;
    let clock = Date.UTC(2026, 4, 4, 9, 0, 0);
    beforeAll(async () => {
      h = await startProxyHarness(fixture, {
        config: { trustProxy: TRUST_LOOPBACK },
        now: () => clock,
        limits: {
          anomalyMinRequests: 20,
          anomalySpikeFactor: 5,
          anomalyDistinctIps: 8,
          anomalyWarmupMs: 5 * 60_000,
        },
      });
    });
    afterAll(async () => {
      await h?.close();
    });

    const send = (token: string, ip: string, country = 'DE') =>
      h.send('/openai/v1/models', {
        headers: { ...bearer(token), 'x-forwarded-for': ip, 'cf-ipcountry': country },
      });

    it('a rate spike raises anomaly.detected and an anomaly-log entry while requests succeed', async () => {
      const { token, tokenId } = await h.createToken({});
      for (let minute = 0; minute < 10; minute++) {
        expect((await send(token, '10.1.0.1')).status).toBe(200);
        clock += 60_000;
      }
      const burst = await pool(40, 8, () => send(token, '10.1.0.1'));
      expect(countBy(burst, (r) => String(r.status))).toEqual({ '200': 40 });
      const spikes = h.events.filter((e) => e.type === 'anomaly.detected' && e.data.token_id === tokenId);
      expect(spikes).toHaveLength(1);
      expect(spikes[0]).toMatchObject({
        accountId: h.accountId,
        data: { token_id: tokenId, kind: 'rate_spike', details: { requests_this_minute: 20, factor: 5 } },
      });
      const logged = await storedAnomalies(h, h.db.store, tokenId);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({
        kind: 'rate_spike',
        reason: 'rate_spike',
        tokenId,
        ip: '10.1.0.1',
        origin: APP_ORIGIN,
        country: 'DE',
        path: '/openai/v1/models',
      });
      clock += 60 * 60_000;
    });

    it('a new country after the warm-up, and a burst of distinct IPs', async () => {
      const { token, tokenId } = await h.createToken({});
      for (let minute = 0; minute < 6; minute++) {
        await send(token, '10.2.0.1', minute % 2 ? 'DE' : 'FR');
        clock += 60_000;
      }
      expect((await send(token, '10.2.0.1', 'BR')).status).toBe(200);
      const mine = () => h.events.filter((e) => e.data.token_id === tokenId).map((e) => e.data.kind);
      expect(mine()).toEqual(['new_country']);
      clock += 10 * 60_000; // a fresh IP window
      for (let i = 0; i < 8; i++) expect((await send(token, `10.3.0.${i}`, 'BR')).status).toBe(200);
      expect(mine()).toEqual(['new_country', 'many_ips']);
      const logged = await storedAnomalies(h, h.db.store, tokenId);
      expect(logged.map((a) => a.kind).sort()).toEqual(['many_ips', 'new_country']);
      expect(logged.find((a) => a.kind === 'new_country')).toMatchObject({ country: 'BR', ip: '10.2.0.1' });
    });
  });
}
