import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RedisClient } from '../../src/cluster/redis-connection.js';
import { backoffWaitMs, MemoryCounters, type Counters } from '../../src/limits/counters.js';
import { IP_BACKOFF_POLICY, IpBackoff, retryAfterSeconds } from '../../src/limits/ip-backoff.js';
import { SUMMARY_DISTINCT_MAX, type SummaryPart } from '../../src/limits/summary-part.js';
import { useCounterImplementations } from './counters-support.js';

const HOUR = 3_600_000;
// One suite, two implementations (DESIGN §9): every answer of RedisCounters must equal MemoryCounters'.
const { IMPLEMENTATIONS, redisClient } = useCounterImplementations();
const client = (): RedisClient => redisClient();

describe('backoff schedule', () => {
  const table: [number, number][] = [
    [0, 0],
    [1, 1_000],
    [2, 2_000],
    [3, 4_000],
    [4, 8_000],
    [10, 512_000],
    [12, 2_048_000],
    [13, HOUR], // 4,096 s capped at 3,600 s
    [14, HOUR],
    [1000, HOUR],
  ];
  for (const [attempts, wait] of table) {
    it(`attempt ${attempts} → ${wait} ms`, () => {
      expect(backoffWaitMs(attempts, IP_BACKOFF_POLICY)).toBe(wait);
    });
  }

  it('Retry-After rounds up to whole seconds', () => {
    expect([0, -5, 1, 999, 1000, 1001].map(retryAfterSeconds)).toEqual([0, 0, 1, 1, 1, 2]);
  });
});

for (const { name, make } of IMPLEMENTATIONS) {
  describe(name, () => {
    let counters: Counters;
    beforeEach(async () => {
      if (name === 'RedisCounters') await client().sendCommand(['FLUSHALL']);
    });

    describe('IpBackoff', () => {
      it('first attempt passes, attempts within the wait are refused and double it, an hour resets', async () => {
        counters = make();
        const b = new IpBackoff(counters);
        const t0 = 1_700_000_000_000;
        expect(await b.check('1.2.3.4', t0)).toBe(0);
        expect(await b.strike('1.2.3.4', t0)).toBe(0); // answered 401/403; now waits 1 s
        expect(await b.check('1.2.3.4', t0)).toBe(1);
        expect(await b.strike('1.2.3.4', t0 + 500)).toBe(2); // in backoff: 429, wait now 2 s from here
        expect(await b.strike('1.2.3.4', t0 + 600)).toBe(4);
        expect(await b.check('1.2.3.4', t0 + 600 + 3_999)).toBe(1);
        expect(await b.check('1.2.3.4', t0 + 600 + 4_000)).toBe(0);
        // After the wait, the next attempt is answered normally but still deepens the wait (8 s).
        expect(await b.strike('1.2.3.4', t0 + 10_000)).toBe(0);
        expect(await b.check('1.2.3.4', t0 + 10_000)).toBe(8);
        // Other IPs are untouched.
        expect(await b.check('5.6.7.8', t0 + 10_000)).toBe(0);
        // An hour without attempts forgets everything: back to 1 s.
        const later = t0 + 10_000 + HOUR;
        expect(await b.strike('1.2.3.4', later)).toBe(0);
        expect(await b.check('1.2.3.4', later)).toBe(1);
      });

      it('a hammering IP reaches the one-hour cap and stays there', async () => {
        counters = make();
        const b = new IpBackoff(counters);
        const waits: number[] = [];
        for (let i = 0; i < 16; i++) {
          await b.strike('9.9.9.9', 1000 + i);
          waits.push(await b.check('9.9.9.9', 1000 + i));
        }
        expect(waits.slice(0, 4)).toEqual([1, 2, 4, 8]);
        expect(waits.slice(12)).toEqual([3600, 3600, 3600, 3600]);
      });
    });

    describe('fixed-window counter', () => {
      it('counts within a window opened by the first hit and starts over after it', async () => {
        counters = make();
        const rows: [number, number, number][] = [
          // [now, expected count, expected resetAt]
          [1000, 1, 11_000],
          [1001, 2, 11_000],
          [10_999, 3, 11_000],
          [11_000, 1, 21_000],
          [30_000, 1, 40_000],
        ];
        for (const [now, count, resetAt] of rows) {
          const hit = await counters.hit('k', 10_000, now);
          expect({ count: hit.count, resetAt: hit.resetAt }).toEqual({ count, resetAt });
        }
      });

      it('keys are independent; seed sets once, add accumulates until expiry', async () => {
        counters = make();
        expect((await counters.hit('a', 1000, 0)).count).toBe(1);
        expect((await counters.hit('b', 1000, 0)).count).toBe(1);
        expect(await counters.seed('q', 5, 100, 0)).toBe(5);
        expect(await counters.seed('q', 9, 100, 1)).toBe(5);
        expect(await counters.add('q', 1, 100, 2)).toBe(6);
        expect(await counters.add('q', 1, 200, 100)).toBe(1); // expired: starts over
      });
    });

    describe('reserve and add', () => {
      it('reserves within the limit only; absent and expired count as 0; a negative add releases', async () => {
        counters = make();
        // [amount, limit, expiresAt, now, expected {ok, total}]
        const rows: [number, number, number, number, { ok: boolean; total: number }][] = [
          [30, 100, 1_000, 0, { ok: true, total: 30 }], // absent: 0 + 30
          [60, 100, 5_000, 1, { ok: true, total: 90 }], // live: the first expiry stays
          [20, 100, 5_000, 2, { ok: false, total: 90 }], // would be 110: refused, unchanged
          [10, 100, 5_000, 3, { ok: true, total: 100 }], // exactly the limit is within it
          [1, 100, 5_000, 4, { ok: false, total: 100 }],
          [50, 100, 2_000, 1_000, { ok: true, total: 50 }], // expired at 1 000: starts from 0
        ];
        for (const [amount, limit, expiresAt, now, expected] of rows) {
          expect(await counters.reserve('r', amount, limit, expiresAt, now), `at ${now}`).toEqual(expected);
        }
        // Settling: the unused part of a reservation is given back with a negative add.
        expect(await counters.add('r', -35, 9_999, 1_001)).toBe(15);
        expect(await counters.reserve('r', 85, 100, 9_999, 1_002)).toEqual({ ok: true, total: 100 });
        // A refused reservation on an absent key creates nothing.
        expect(await counters.reserve('none', 5, 4, 100, 0)).toEqual({ ok: false, total: 0 });
        expect(await counters.add('none', 1, 100, 1)).toBe(1);
      });

      it('fractional amounts sum exactly as JavaScript sums them', async () => {
        counters = make();
        let expected = 0;
        for (const amount of [0.1, 0.2, 1e-9, 12.345678901234567, -0.3]) {
          expected += amount;
          expect(await counters.add('f', amount, 10_000, 0)).toBe(expected);
        }
        const r = await counters.reserve('g', 0.1, 0.30000000000000004, 10_000, 0);
        expect(r).toEqual({ ok: true, total: 0.1 });
        expect(await counters.reserve('g', 0.2, 0.30000000000000004, 10_000, 0)).toEqual({
          ok: true,
          total: 0.1 + 0.2,
        });
      });

      it('a window answers the same resetAt to every hit in it (RateLimit-Reset)', async () => {
        counters = make();
        // Read at once: the in-memory window is live (counters.ts says so).
        const first = await counters.hit('w', 60_000, 1_700_000_000_123);
        const firstSeen = [first.count, first.resetAt];
        const second = await counters.hit('w', 60_000, 1_700_000_030_000);
        expect([...firstSeen, second.count, second.resetAt]).toEqual([
          1, 1_700_000_060_123, 2, 1_700_000_060_123,
        ]);
      });
    });

    describe('coalescer', () => {
      it('leading alert, then counts until the interval is over; trailing flush carries the rest', async () => {
        counters = make();
        const I = 60_000;
        // [now, trigger, expected covered]
        const rows: [number, boolean, number][] = [
          [0, true, 1], // first attempt alerts at once
          [1_000, true, 0],
          [2_000, false, 0], // an ip_backoff attempt: counted, never alerts by itself
          [59_999, true, 0],
          [60_000, true, 4], // 3 pending + this one
          [61_000, false, 0],
          [119_999, false, 0],
          [120_000, false, 0], // no trigger: still pending
        ];
        for (const [now, trigger, covered] of rows) {
          expect(await counters.coalesce('k', now, I, trigger), `at ${now}`).toBe(covered);
        }
        expect(await counters.flushCoalesced('k', 120_000, I)).toBe(3);
        expect(await counters.flushCoalesced('k', 200_000, I)).toBe(0); // nothing pending
        expect(await counters.coalesce('k', 180_000 + 1, I, true)).toBe(1);
      });

      it('occurrences that may not trigger never alert on their own, not even as a trailing alert', async () => {
        counters = make();
        for (let i = 0; i < 5; i++) expect(await counters.coalesce('k', i, 60_000, false)).toBe(0);
        expect(await counters.flushCoalesced('k', 120_000, 60_000)).toBe(0);
        expect(await counters.coalesce('k', 130_000, 60_000, true)).toBe(6); // the next real alert covers them
      });

      it('flush before the interval is over sends nothing', async () => {
        counters = make();
        await counters.coalesce('k', 0, 60_000, true);
        await counters.coalesce('k', 10, 60_000, true);
        expect(await counters.flushCoalesced('k', 59_999, 60_000)).toBe(0);
        expect(await counters.flushCoalesced('k', 60_000, 60_000)).toBe(1);
      });
    });

    describe('summary pool', () => {
      const part = (over: Partial<SummaryPart>): SummaryPart => ({
        attempts: 1,
        reasons: { origin_not_allowed: 1 },
        origins: [],
        ips: [],
        capped: false,
        first: '2026-11-29T10:00:00.000Z',
        last: '2026-11-29T10:00:00.000Z',
        ...over,
      });

      it('merges every part pooled under a key, and one take gets the whole', async () => {
        counters = make();
        const parts: SummaryPart[] = [
          part({
            attempts: 5,
            reasons: { origin_not_allowed: 2, ip_backoff: 3 },
            origins: ['https://a.example', null],
            ips: ['192.0.2.1'],
            first: '2026-11-29T10:00:02.000Z',
            last: '2026-11-29T10:00:40.000Z',
          }),
          part({
            attempts: 7,
            reasons: { ip_backoff: 6, ip_not_allowed: 1 },
            origins: [null, 'https://b.example'],
            ips: ['192.0.2.1', '2001:db8::/64'],
            first: '2026-11-29T10:00:01.000Z',
            last: '2026-11-29T10:00:30.000Z',
          }),
          part({ attempts: 1, capped: true, origins: ['https://a.example'] }),
        ];
        for (const p of parts) await counters.poolSummary('s', p, 600_000, 1_000);
        await counters.poolSummary('other', part({ attempts: 99 }), 600_000, 1_000);
        expect(await counters.takeSummary('s', 2_000)).toEqual({
          attempts: 13,
          reasons: { origin_not_allowed: 3, ip_backoff: 9, ip_not_allowed: 1 },
          origins: ['https://a.example', null, 'https://b.example'],
          ips: ['192.0.2.1', '2001:db8::/64'],
          capped: true,
          first: '2026-11-29T10:00:00.000Z',
          last: '2026-11-29T10:00:40.000Z',
        });
        // Taken: a second process taking the same key finds nothing to send.
        expect(await counters.takeSummary('s', 2_000)).toBeUndefined();
        expect((await counters.takeSummary('other', 2_000))?.attempts).toBe(99);
      });

      it('counts distinct origins and IPs exactly up to the cap, then says the count is capped', async () => {
        counters = make();
        const origins = (from: number, n: number) =>
          Array.from({ length: n }, (_, i) => `https://o${from + i}.example`);
        await counters.poolSummary('s', part({ origins: origins(0, 600) }), 600_000, 0);
        await counters.poolSummary('s', part({ origins: origins(500, 600) }), 600_000, 0);
        const whole = await counters.takeSummary('s', 0);
        // The first ones, in the order they came (a hash this large no longer keeps insertion order).
        expect(whole?.origins).toEqual(origins(0, SUMMARY_DISTINCT_MAX));
        expect(whole?.capped).toBe(true);
        expect(whole?.ips).toEqual([]);
      });

      it('lists values in the order they came, however long (long fields make a Redis hash unordered)', async () => {
        counters = make();
        const long = (n: number) => `https://${'sub.'.repeat(20)}o${n}.example`;
        await counters.poolSummary(
          's',
          part({ origins: [long(3), null, long(1)], ips: ['192.0.2.9'] }),
          600_000,
          0,
        );
        await counters.poolSummary(
          's',
          part({ origins: [long(2), long(1)], ips: ['192.0.2.1'] }),
          600_000,
          0,
        );
        const whole = await counters.takeSummary('s', 0);
        expect(whole?.origins).toEqual([long(3), null, long(1), long(2)]);
        expect(whole?.ips).toEqual(['192.0.2.9', '192.0.2.1']);
      });

      it('a pool not taken by its expiry is forgotten; a part after it starts a new one', async () => {
        counters = make();
        await counters.poolSummary('s', part({ attempts: 4 }), 10_000, 0);
        expect(await counters.takeSummary('s', 10_000)).toBeUndefined();
        await counters.poolSummary('s', part({ attempts: 4 }), 10_000, 0);
        await counters.poolSummary('s', part({ attempts: 2 }), 30_000, 20_000);
        expect((await counters.takeSummary('s', 20_001))?.attempts).toBe(2);
      });
    });
  });
}

describe('MemoryCounters memory bounds', () => {
  let bounded: MemoryCounters | undefined;
  afterEach(() => bounded?.close());
  it('sweeps expired entries and caps every map', () => {
    const counters = (bounded = new MemoryCounters({ maxEntries: 100 }));
    for (let i = 0; i < 1000; i++) {
      counters.hit(`w${i}`, 1000, 0);
      counters.add(`v${i}`, 1, 1000, 0);
      counters.strike(`b${i}`, 0, IP_BACKOFF_POLICY);
      counters.coalesce(`c${i}`, 0, 1000, true);
      counters.poolSummary(
        `s${i}`,
        { attempts: 1, reasons: {}, origins: [], ips: [], capped: false, first: '', last: '' },
        1000,
        0,
      );
    }
    expect(counters.sizes).toEqual({
      windows: 100,
      values: 100,
      backoffs: 100,
      coalesced: 100,
      summaries: 100,
    });
    counters.sweep(HOUR + 1);
    expect(counters.sizes).toEqual({ windows: 0, values: 0, backoffs: 0, coalesced: 0, summaries: 0 });
  });
});
