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

/**
 * The young generation's size, which V8 reads only when the process starts (`setFlagsFromString`
 * has no effect on it, and `NODE_OPTIONS` is the operator's). Node 24's V8 grows it to 64 MB under
 * load (Node 22: 32 MB); a scavenge pause grows with what was allocated since the last one (freeing
 * the dead requests' ArrayBuffers, the weak callbacks of their native handles), so after a busy spell
 * each scavenge stopped the proxy for 5-20 ms, every ~1.6 s at 1,000 req/s: every request in flight
 * meanwhile was that much late (issue 17, docs/performance.md "Tails"). 8 MB semi-spaces (16 MB of
 * young generation) keep the pauses at ~2-3 ms at the price of more, shorter scavenges.
 */
export const SEMI_SPACE_FLAG = '--max-semi-space-size';
export const SERVE_SEMI_SPACE_MB = 8;

/**
 * Whether the process must be started again to get SERVE_SEMI_SPACE_MB: not when the operator chose
 * a size (on node's command line or in NODE_OPTIONS), which always wins.
 */
export function needsSemiSpaceRestart(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  const chosen = (arg: string): boolean => arg === SEMI_SPACE_FLAG || arg.startsWith(`${SEMI_SPACE_FLAG}=`);
  if (execArgv.some(chosen)) return false;
  return !(nodeOptions ?? '').split(/\s+/).some(chosen);
}

/**
 * Replaces this process by the same command with the young-generation flag (`process.execve`: same
 * pid, same open stdio, same CPU affinity, so supervisors and `taskset` see no difference). Returns
 * only when no restart is needed or the platform cannot do it (no `execve` on Windows): the server
 * then runs with V8's default size.
 */
export function restartWithServeHeap(): void {
  if (!needsSemiSpaceRestart(process.execArgv, process.env.NODE_OPTIONS)) return;
  if (process.execve === undefined || process.platform === 'win32') return;
  const flag = `${SEMI_SPACE_FLAG}=${SERVE_SEMI_SPACE_MB}`;
  process.execve(process.execPath, [process.execPath, flag, ...process.execArgv, ...process.argv.slice(1)]);
}
