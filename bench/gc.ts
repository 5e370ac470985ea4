/**
 * Garbage collections of a tokenproxy during a run, read from its own `/metrics` before and after:
 * prom-client's default `nodejs_gc_duration_seconds` histogram, fed by Node's `gc` performance
 * entries (main-thread pauses). The bench prints them next to the latency percentiles because young-
 * generation pauses are where most of the proxy's tail comes from (docs/performance.md, "Tails").
 */

export interface GcTotals {
  /** Scavenges (young generation). */
  readonly minorCount: number;
  readonly minorS: number;
  /** Mark-compact and incremental-marking steps (old generation). */
  readonly majorCount: number;
  readonly majorS: number;
}

export const NO_GC: GcTotals = { minorCount: 0, minorS: 0, majorCount: 0, majorS: 0 };

/** Reads the gc histogram's `_count` and `_sum` lines out of Prometheus text. */
export function parseGcTotals(text: string): GcTotals {
  const value = (suffix: 'count' | 'sum', kind: string): number => {
    const m = new RegExp(`^nodejs_gc_duration_seconds_${suffix}\\{kind="${kind}"\\} (\\S+)$`, 'm').exec(text);
    return m === null ? 0 : Number(m[1]);
  };
  return {
    minorCount: value('count', 'minor'),
    minorS: value('sum', 'minor'),
    majorCount: value('count', 'major') + value('count', 'incremental'),
    majorS: value('sum', 'major') + value('sum', 'incremental'),
  };
}

export function gcAdd(a: GcTotals, b: GcTotals): GcTotals {
  return {
    minorCount: a.minorCount + b.minorCount,
    minorS: a.minorS + b.minorS,
    majorCount: a.majorCount + b.majorCount,
    majorS: a.majorS + b.majorS,
  };
}

export function gcSub(after: GcTotals, before: GcTotals): GcTotals {
  return {
    minorCount: after.minorCount - before.minorCount,
    minorS: after.minorS - before.minorS,
    majorCount: after.majorCount - before.majorCount,
    majorS: after.majorS - before.majorS,
  };
}

/** Per 1,000 requests: collections and milliseconds paused, and the mean pause, young and old. */
export function gcSummary(gc: GcTotals, requests: number): Record<string, number> {
  const per = requests > 0 ? 1000 / requests : 0;
  const r = (n: number, d: number): number => Math.round(n * 10 ** d) / 10 ** d;
  return {
    requests,
    scavenges_per_1000_requests: r(gc.minorCount * per, 2),
    scavenge_ms_per_1000_requests: r(gc.minorS * 1000 * per, 2),
    scavenge_mean_ms: gc.minorCount > 0 ? r((gc.minorS * 1000) / gc.minorCount, 2) : 0,
    old_gen_gcs_per_1000_requests: r(gc.majorCount * per, 2),
    old_gen_ms_per_1000_requests: r(gc.majorS * 1000 * per, 2),
  };
}
