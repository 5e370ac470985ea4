import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCounters } from '../../src/limits/counters.js';
import { periodWindow } from '../../src/usage/budget.js';
import type { PriceData } from '../../src/usage/prices.js';
import { databases } from '../support/databases.js';
import { bearer, startProxyHarness, type ProxyHarness } from '../proxy/harness.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

const PRICES: PriceData = { openai: { 'gpt-4o': { input: 2.5, output: 10 } } };

/**
 * The budget peek reads the first 16 KiB of a body before the request is forwarded. Over HTTP/2 it
 * reads them off the stream (src/proxy/h2-stream.ts), then hands the rest on: both must reach the
 * provider whole, and the reservation must be settled, as over HTTP/1.1 (budgets-e2e.test.ts).
 */
describe('budgets over h2: the peeked body reaches the provider whole', () => {
  let h: ProxyHarness;
  const counters = new MemoryCounters();
  const spentOf = (tokenId: string): number => {
    const now = Date.now();
    const w = periodWindow('day', now);
    return counters.reserve(`budget:token:${tokenId}:${w.name}`, 0, Infinity, w.end, now).total;
  };

  beforeAll(async () => {
    h = await startProxyHarness(sqlite, {
      protocol: 'h2',
      usage: { prices: PRICES, counters, defaultReservation: 1000, accountTtlMs: 0 },
    });
  });
  afterAll(async () => {
    await h?.close();
    counters.close();
  });

  it.each([
    ['a body within the peek', 200],
    ['a body past the peek, streamed on', 40_000],
  ])('%s (%d bytes of content)', async (_, size) => {
    const { token, tokenId } = await h.createToken({ budget: { tokens: 10_000_000, period: 'day' } });
    const body = JSON.stringify({
      model: 'gpt-4o',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x'.repeat(size) }],
    });
    const seen = h.httpVersions.length;
    const res = await h.send('/openai/echo-body', {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body,
    });
    expect([res.status, res.text]).toEqual([200, body]);
    expect(h.mock.received.at(-1)?.body.toString()).toBe(body);
    expect(h.httpVersions.slice(seen)).toEqual(['2.0']);
    await h.recordOf(res.headers['x-tokenproxy-request-id']);
    // A whole answer that is not a stream and reports no usage spent nothing we can know of: 0.
    expect(spentOf(tokenId)).toBe(0);
  });
});
