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
  /** Pauses of either kind longer than 10 ms (the histogram's 0.01 s bucket): issue 17's stall size. */
  readonly over10ms: number;
  /**
   * The longest event-loop delay prom-client saw since its previous scrape (it resets on each): read
   * after a run, the worst stall of the proxy's own thread during it, whatever caused it. Not a sum.
   */
  readonly loopDelayMaxS: number;
}

export const NO_GC: GcTotals = {
  minorCount: 0,
  minorS: 0,
  majorCount: 0,
  majorS: 0,
  over10ms: 0,
  loopDelayMaxS: 0,
};

/** Reads the gc histogram's `_count` and `_sum` lines out of Prometheus text. */
export function parseGcTotals(text: string): GcTotals {
  const value = (suffix: 'count' | 'sum', kind: string): number => {
    const m = new RegExp(`^nodejs_gc_duration_seconds_${suffix}\\{kind="${kind}"\\} (\\S+)$`, 'm').exec(text);
    return m === null ? 0 : Number(m[1]);
  };
  const count = (kind: string): number => value('count', kind);
  // A series without its bucket line (not prom-client's output) reads as no long pause.
  const upTo10ms = (kind: string): number => {
    const m = new RegExp(
      `^nodejs_gc_duration_seconds_bucket\\{le="0.01",kind="${kind}"\\} (\\S+)$`,
      'm',
    ).exec(text);
    return m === null ? count(kind) : Number(m[1]);
  };
  const loopMax = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
  return {
    minorCount: count('minor'),
    minorS: value('sum', 'minor'),
    majorCount: count('major') + count('incremental'),
    majorS: value('sum', 'major') + value('sum', 'incremental'),
    over10ms: ['minor', 'major', 'incremental'].reduce((n, k) => n + count(k) - upTo10ms(k), 0),
    loopDelayMaxS: loopMax === null ? 0 : Number(loopMax[1]),
  };
}

export function gcAdd(a: GcTotals, b: GcTotals): GcTotals {
  return {
    minorCount: a.minorCount + b.minorCount,
    minorS: a.minorS + b.minorS,
    majorCount: a.majorCount + b.majorCount,
    majorS: a.majorS + b.majorS,
    over10ms: a.over10ms + b.over10ms,
    loopDelayMaxS: Math.max(a.loopDelayMaxS, b.loopDelayMaxS),
  };
}

export function gcSub(after: GcTotals, before: GcTotals): GcTotals {
  return {
    minorCount: after.minorCount - before.minorCount,
    minorS: after.minorS - before.minorS,
    majorCount: after.majorCount - before.majorCount,
    majorS: after.majorS - before.majorS,
    over10ms: after.over10ms - before.over10ms,
    loopDelayMaxS: after.loopDelayMaxS,
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
    pauses_over_10ms: gc.over10ms,
    event_loop_delay_max_ms: r(gc.loopDelayMaxS * 1000, 1),
  };
}
