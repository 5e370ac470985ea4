/** Small statistics helpers for the benchmark (latencies in milliseconds). */

export interface Percentiles {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function summarize(values: readonly number[]): Percentiles {
  const sorted = Float64Array.from(values).sort();
  const list = Array.from(sorted);
  let sum = 0;
  for (const v of list) sum += v;
  return {
    count: list.length,
    p50: percentile(list, 50),
    p90: percentile(list, 90),
    p99: percentile(list, 99),
    max: list.length === 0 ? Number.NaN : (list[list.length - 1] as number),
    mean: list.length === 0 ? Number.NaN : sum / list.length,
  };
}

/** Per-percentile difference b − a (what the proxy adds when a is direct and b proxied). */
export function difference(a: Percentiles, b: Percentiles): { p50: number; p90: number; p99: number } {
  return { p50: b.p50 - a.p50, p90: b.p90 - a.p90, p99: b.p99 - a.p99 };
}

export function median(values: readonly number[]): number {
  return percentile(Float64Array.from(values).sort() as unknown as number[], 50);
}

export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * a[i] / b[i] for each round i, rounded. Interleaving runs both scenarios of a round back to back,
 * so a per-round ratio is less exposed to slow machine drift than the ratio of the two medians.
 */
export function pairedRatios(a: readonly number[], b: readonly number[]): number[] {
  const n = Math.min(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(round((a[i] as number) / (b[i] as number), 3));
  return out;
}
