import { setFlagsFromString } from 'node:v8';

/**
 * V8 settings for the long-running server, applied by `tokenproxy serve` before anything else loads.
 *
 * Allocation-site pretenuring: once objects from an allocation site survive young-generation
 * collections often enough, V8 starts allocating them straight in the old generation. Under proxy
 * load a short stall (JIT warm-up, a burst) is enough to tip the per-request objects over, and from
 * then on every request's garbage went to the old generation: the heap grew ~3 MB per scavenge, each
 * scavenge took 13-19 ms instead of ~2 ms (it must scan the old-to-new pointers those objects bring)
 * and a mark-compact followed every few seconds. Measured with `--trace-gc` at 1,000 req/s; see
 * docs/performance.md. Per-request objects die young, so the heuristic only ever hurts here.
 */
export const SERVE_V8_FLAGS = ['--no-allocation-site-pretenuring'] as const;

export function applyServeV8Flags(): void {
  for (const flag of SERVE_V8_FLAGS) setFlagsFromString(flag);
}
