import { collectDefaultMetrics, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { gcSub, gcSummary, parseGcTotals } from '../../bench/gc.js';

// The bench reads a tokenproxy's collections from its /metrics; these pin that reading.
describe('bench: garbage collections from /metrics', () => {
  it.each([
    {
      name: 'young and old generation',
      text: [
        'nodejs_gc_duration_seconds_bucket{le="0.001",kind="minor"} 3',
        'nodejs_gc_duration_seconds_sum{kind="minor"} 0.25',
        'nodejs_gc_duration_seconds_count{kind="minor"} 50',
        'nodejs_gc_duration_seconds_sum{kind="major"} 0.5',
        'nodejs_gc_duration_seconds_count{kind="major"} 2',
        'nodejs_gc_duration_seconds_sum{kind="incremental"} 0.01',
        'nodejs_gc_duration_seconds_count{kind="incremental"} 4',
        'nodejs_gc_duration_seconds_bucket{le="0.01",kind="minor"} 47',
        'nodejs_gc_duration_seconds_bucket{le="0.01",kind="major"} 1',
        'nodejs_gc_duration_seconds_bucket{le="0.01",kind="incremental"} 4',
        'nodejs_eventloop_lag_max_seconds 0.0213',
      ].join('\n'),
      want: { minorCount: 50, minorS: 0.25, majorCount: 6, majorS: 0.51, over10ms: 4, loopDelayMaxS: 0.0213 },
    },
    {
      name: 'no collection yet (prom-client prints no series)',
      text: '# TYPE nodejs_gc_duration_seconds histogram\n',
      want: { minorCount: 0, minorS: 0, majorCount: 0, majorS: 0, over10ms: 0, loopDelayMaxS: 0 },
    },
    {
      name: 'a similarly named metric is not read',
      text: 'xnodejs_gc_duration_seconds_count{kind="minor"} 9\nnodejs_gc_duration_seconds_count{kind="minor"} 1',
      want: { minorCount: 1, minorS: 0, majorCount: 0, majorS: 0, over10ms: 0, loopDelayMaxS: 0 },
    },
  ])('$name', ({ text, want }) => {
    const got = parseGcTotals(text);
    expect(got.minorCount).toBe(want.minorCount);
    expect(got.minorS).toBeCloseTo(want.minorS, 9);
    expect(got.majorCount).toBe(want.majorCount);
    expect(got.majorS).toBeCloseTo(want.majorS, 9);
    expect(got.over10ms).toBe(want.over10ms);
    expect(got.loopDelayMaxS).toBeCloseTo(want.loopDelayMaxS, 9);
  });

  it("reads prom-client's own output after real scavenges", async () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const before = parseGcTotals(await registry.metrics());
    // Short-lived garbage, several times the young generation: V8 must scavenge. The objects are
    // stored (and overwritten) so that the optimizing compiler cannot prove them unused and skip
    // allocating them, which it did for throwaway literals when this file ran beside the suite.
    const ring: unknown[] = new Array<unknown>(1024);
    for (let i = 0; i < 2_000_000; i++) ring[i & 1023] = { i, list: [i] };
    expect(ring).toHaveLength(1024);
    // Node delivers `gc` performance entries asynchronously: wait for them, up to 5 s.
    let after = parseGcTotals(await registry.metrics());
    for (let waited = 0; after.minorCount === before.minorCount && waited < 5000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = parseGcTotals(await registry.metrics());
    }
    const during = gcSub(after, before);
    expect(during.minorCount).toBeGreaterThan(0);
    expect(during.minorS).toBeGreaterThan(0);
    const summary = gcSummary(during, 2000);
    expect(summary.scavenges_per_1000_requests).toBeCloseTo(during.minorCount / 2, 2);
    expect(summary.scavenge_mean_ms).toBeGreaterThan(0);
    // Every pause counted is either within the 10 ms bucket or over it: never more over than in all.
    expect(during.over10ms).toBeGreaterThanOrEqual(0);
    expect(during.over10ms).toBeLessThanOrEqual(during.minorCount + during.majorCount);
  });
});
