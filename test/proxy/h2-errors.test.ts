import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { describeErrorRows } from './error-rows.js';
import { bearer, startProxyHarness, type ProxyHarness } from './harness.js';

describeErrorRows('h2');

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

/** The 429 rows of DESIGN §4 over h2: the same codes and headers as over HTTP/1.1. */
describe('limits refusals over h2: ip_backoff, rate_limited, quota_exceeded', () => {
  let h: ProxyHarness;
  beforeAll(async () => {
    h = await startProxyHarness(sqlite, {
      protocol: 'h2',
      accountPlan: 'free',
      limits: { plans: { free: { activeTokens: 10, requestsPerMonth: 6 } } },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('429 ip_backoff with Retry-After after a refusal from the same IP', async () => {
    const { token } = await h.createToken({});
    const first = await h.send('/openai/v1/models', { headers: bearer(token, 'https://evil.example') });
    expect([first.status, first.json.error?.code]).toEqual([403, 'origin_not_allowed']);
    const again = await h.send('/openai/v1/models', { headers: bearer(token, 'https://evil.example') });
    expect([again.status, again.json.error?.code, again.headers['retry-after']]).toEqual([
      429,
      'ip_backoff',
      '2',
    ]);
    expect(again.headers['access-control-allow-origin']).toBe('https://evil.example');
  });

  it('429 rate_limited with Retry-After and RateLimit-*, then 429 quota_exceeded', async () => {
    const { token } = await h.createToken({ rateLimit: { requests: 2, window: '1h' } });
    const ok = await h.send('/openai/v1/models', { headers: bearer(token) });
    expect([ok.status, ok.headers['ratelimit-limit'], ok.headers['ratelimit-remaining']]).toEqual([
      200,
      '2',
      '1',
    ]);
    expect((await h.send('/openai/v1/models', { headers: bearer(token) })).status).toBe(200);
    const limited = await h.send('/openai/v1/models', { headers: bearer(token) });
    expect([limited.status, limited.json.error?.code]).toEqual([429, 'rate_limited']);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(3500);
    expect(limited.headers['ratelimit-remaining']).toBe('0');

    // The account's plan allows 6 requests a month; 2 are used: 4 more, then quota_exceeded.
    const { token: other } = await h.createToken({});
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await h.send('/openai/v1/models', { headers: bearer(other) })).status);
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    const refused = await h.send('/openai/v1/models', { headers: bearer(other) });
    expect([refused.status, refused.json.error?.code]).toEqual([429, 'quota_exceeded']);
    const rec = await h.recordOf(refused.headers['x-tokenproxy-request-id']);
    expect(rec).toMatchObject({ status: 429, authorized: true, forwarded: false });
    expect(new Set(h.httpVersions)).toEqual(new Set(['2.0']));
  });
});
