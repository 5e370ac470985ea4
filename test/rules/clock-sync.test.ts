import { describe, expect, it } from 'vitest';
import {
  MAX_SAMPLE_RTT_MS,
  STALE_ANCHOR_MS,
  acceptableRtt,
  bestSample,
  fastestSample,
  monoToServer,
  type ClockSample,
} from '../../src/rules/clock-sync.js';

const T = 1_800_000_000_000;
const at = (sentMono: number, receivedMono: number, serverMs = T): ClockSample => ({
  sentMono,
  receivedMono,
  serverMs,
});

describe('reading the database clock', () => {
  it.each<[string, ClockSample[], ClockSample | undefined]>([
    ['the shortest round trip wins', [at(0, 5), at(10, 11), at(20, 23)], at(10, 11)],
    ['the first of equal round trips', [at(0, 2), at(10, 12)], at(0, 2)],
    ['one just under the limit', [at(0, MAX_SAMPLE_RTT_MS)], at(0, MAX_SAMPLE_RTT_MS)],
    ['none under the limit', [at(0, MAX_SAMPLE_RTT_MS + 1), at(200, 400)], undefined],
    ['a slow one beside a fast one', [at(0, 500), at(600, 601)], at(600, 601)],
    ['a negative round trip is not a reading', [at(10, 5)], undefined],
    ['a time that is not a number', [at(0, 1, Number.NaN)], undefined],
    ['nothing read', [], undefined],
  ])('%s', (_name, samples, best) => {
    expect(bestSample(samples)).toEqual(best);
  });

  it.each([
    // [sentMono, receivedMono, serverMs, what performance.now() is offset by]
    [1_000, 1_000, T, T - 1_000], // an instant round trip
    [1_000, 1_010, T, T - 1_005], // the database read its clock half way, as far as one can tell
    [0, 100, T + 50, T], // 100 ms round trip, answered "T + 50": mono 50 is T + 50
  ])('monoToServer(%i, %i, %i) = %i', (sentMono, receivedMono, serverMs, base) => {
    expect(monoToServer({ sentMono, receivedMono, serverMs })).toBe(base);
  });

  it.each([
    // [shortest round trip seen, ms since a reading was taken, the longest taken now]
    [2, 30_000, MAX_SAMPLE_RTT_MS], // a near database: the fixed bound
    [80, 30_000, 120], // half again the shortest, above the bound
    [150, 30_000, 225], // a database in another region is still followed
    [2, STALE_ANCHOR_MS - 1, MAX_SAMPLE_RTT_MS],
    [2, STALE_ANCHOR_MS, Number.POSITIVE_INFINITY], // an old anchor: the best of the next readings
    [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY], // none taken yet
  ])('acceptableRtt(%d, %d) = %d', (shortest, since, limit) => {
    expect(acceptableRtt(shortest, since)).toBe(limit);
  });

  it('bestSample takes a bound of its own; fastestSample takes none', () => {
    const slow = [at(0, 300), at(400, 550)];
    expect(bestSample(slow)).toBeUndefined();
    expect(bestSample(slow, 225)).toEqual(at(400, 550));
    expect(fastestSample(slow)).toEqual(at(400, 550));
    expect(fastestSample([at(5, 1)])).toBeUndefined();
  });
});
