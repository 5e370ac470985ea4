/**
 * Pure rules of the stall probe (bench/stall-probe.ts): reading Linux's per-thread scheduler
 * statistics and turning two readings into what ran in between.
 */
import { round } from './stats.js';

/** `/proc/<pid>/task/<tid>/schedstat`: time on a CPU, time waiting for one (ns), and time slices. */
export interface Schedstat {
  readonly runNs: number;
  readonly waitNs: number;
  readonly slices: number;
}

export function parseSchedstat(text: string): Schedstat | undefined {
  const [run, wait, slices] = text.trim().split(/\s+/).map(Number);
  if (run === undefined || wait === undefined || slices === undefined) return undefined;
  if (![run, wait, slices].every(Number.isFinite)) return undefined;
  return { runNs: run, waitNs: wait, slices };
}

/**
 * How long each thread ran between two readings (thread id → its schedstat), in ms per thread name
 * (V8's helpers share one name, so they add up), leaving out `skip` (the reading thread) and anything
 * under `minMs`. A thread that appeared in between counts from zero; one that ended, not at all.
 */
export function runByName(
  before: ReadonlyMap<string, Schedstat>,
  after: ReadonlyMap<string, Schedstat>,
  names: ReadonlyMap<string, string>,
  skip: string,
  minMs: number,
): Record<string, number> {
  const byName: Record<string, number> = {};
  for (const [tid, { runNs }] of after) {
    if (tid === skip) continue;
    const ms = (runNs - (before.get(tid)?.runNs ?? 0)) / 1e6;
    if (ms <= 0) continue;
    const name = names.get(tid) ?? tid;
    byName[name] = (byName[name] ?? 0) + ms;
  }
  return Object.fromEntries(
    Object.entries(byName)
      .filter(([, ms]) => ms >= minMs)
      .map(([name, ms]) => [name, round(ms, 2)]),
  );
}

/** A garbage collection as Node's `gc` performance entry gives it (ms on the performance clock). */
export interface GcEntry {
  readonly start: number;
  readonly duration: number;
  /** `perf_hooks.constants.NODE_PERFORMANCE_GC_*`: 1 minor, 4 major, 8 incremental, 16 weak callbacks. */
  readonly kind: number;
}

/** The collections that overlap [from, to]: [duration ms, kind] each. */
export function overlapping(gcs: readonly GcEntry[], from: number, to: number): [number, number][] {
  return gcs
    .filter((g) => g.start < to && g.start + g.duration > from)
    .map((g) => [round(g.duration, 2), g.kind]);
}
