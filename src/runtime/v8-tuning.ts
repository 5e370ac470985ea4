import { availableParallelism } from 'node:os';
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
 * How many helper threads V8 gets (concurrent marking, parallel scavenging, background compiling):
 * Node starts 4 whatever the machine. Where the process has few CPUs, they took them from the thread
 * serving requests: on one CPU each helper got a full scheduler slice (~4 ms) while requests waited,
 * 12-24 ms stalls in issue 17's steady state (docs/performance.md, round eight). Each serving process
 * (`workers` of them share the CPUs) leaves one of its share to that thread: share − 1 helpers, at
 * least 1 (0 would mean "Node's choice"), at most Node's 4.
 */
export const POOL_SIZE_FLAG = '--v8-pool-size';
export const MAX_POOL_SIZE = 4;

/** The CPUs one serving process may count on: `workers` processes share what `cpus` gives them. */
export function serveCpuShare(cpus: number, workers = 1): number {
  return Math.max(1, Math.floor(cpus / Math.max(1, workers)));
}

export function servePoolSize(cpus: number, workers = 1): number {
  return Math.min(MAX_POOL_SIZE, Math.max(1, serveCpuShare(cpus, workers) - 1));
}

/**
 * A young-generation collection (scavenge) is split between the thread that needs it and V8's
 * helpers, and that thread waits until the helpers' part is done. A process with one CPU to itself
 * (its share of the machine, a `taskset` or a cpuset) runs that part one thread at a time, with
 * hand-overs between them: at 1,000 req/s in the bench's steady phase the proxy's thread spent ~0.9
 * ms of each 2.6 ms pause waiting while the helper did its 0.74 ms on the same CPU. With the whole
 * scavenge on the proxy's thread, three alternated pairs of steady runs counted about half as many
 * requests over +10 ms (issue 17, docs/performance.md round twelve). With more than one CPU the
 * helpers can run beside it, so the flag is only set for a share of one CPU. Concurrent marking and
 * compiling keep their helper either way. NODE_OPTIONS refuses the flag; node's command line takes it.
 */
export const PARALLEL_SCAVENGE_FLAG = '--parallel-scavenge';
export const SERVE_NO_PARALLEL_SCAVENGE = '--no-parallel-scavenge';

/**
 * How far V8 lets the old generation grow past what the last full collection kept, in percent.
 * V8 picks the factor from how fast it marks against how fast the program promotes: a proxy in
 * steady state promotes little (~0.1 MB/s at 1,000 req/s), so after any full collection the factor
 * fell to its floor (1.1) and the limit to what was kept + 8 MB + the young generation. Marking starts
 * once what is left under the limit is no more than the young generation's target size, and that was
 * the case at once: back-to-back full collections, 2-3 a second with ~40 ms of marking each, for as
 * long as the load stayed steady (on one CPU the "concurrent" marking is the proxy's CPU). Whether a
 * run fell into it depended on whether a full collection happened after the load settled (issue 17's
 * "long run": sooner or later one does). A fixed factor of 2 keeps ~the live size of headroom: in six
 * alternated pairs of steady runs, 238 full collections with V8's rule and 6 with it
 * (docs/performance.md, round ten).
 */
export const HEAP_GROWING_FLAG = '--heap-growing-percent';
export const SERVE_HEAP_GROWING_PERCENT = 100;

/**
 * V8's memory reducer: after a full collection it looks at each thread every 8 s, and one that
 * allocates little is taken for idle and given memory-reducing collections (every page compacted,
 * maps dropped with the optimized code that embeds them); a watchdog starts one anyway once 100 s
 * have passed since the last full collection. The request-log thread allocates little between its
 * batches and looked idle at 1,000 req/s, and the fixed growing factor above makes 100 s without a
 * full collection the rule in steady state: a trace of the bench's steady phase had two of the log
 * thread's (59.8 and 18.1 ms) and the watchdog's on the proxy's thread (25.3 ms after 41.8 ms of
 * marking) on the proxy's one CPU under load (issue 17, docs/performance.md round twelve).
 * tokenproxy reduces memory itself once a busy spell has been followed by a quiet minute
 * (src/runtime/idle-memory.ts), so V8's own is off. V8 reads this flag only when a thread's heap is
 * set up, and NODE_OPTIONS refuses it.
 */
export const MEMORY_REDUCER_FLAG = '--memory-reducer';
export const SERVE_MEMORY_REDUCER = '--no-memory-reducer';

/**
 * The flags `serve` must restart with: each of its start-time flags that the operator did not choose
 * (on node's command line or in NODE_OPTIONS, which always win). Empty: no restart. `cpus` is what
 * the process may run on (`os.availableParallelism()`, which honours `taskset` and cpusets); `--workers`
 * children inherit the primary's flags.
 */
export function serveRestartFlags(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
  cpus: number,
  workers = 1,
): string[] {
  const options = (nodeOptions ?? '').split(/\s+/);
  // V8 reads `_` and `-` alike in a flag's name, and a boolean flag is chosen in either sense.
  const name = (arg: string): string => {
    const eq = arg.indexOf('=');
    return (eq === -1 ? arg : arg.slice(0, eq)).replaceAll('_', '-');
  };
  const chosen = (flag: string): boolean => {
    const is = (arg: string): boolean => {
      const n = name(arg);
      return n === flag || n === flag.replace(/^--/, '--no-');
    };
    return execArgv.some(is) || options.some(is);
  };
  const flags: string[] = [];
  if (!chosen(SEMI_SPACE_FLAG)) flags.push(`${SEMI_SPACE_FLAG}=${SERVE_SEMI_SPACE_MB}`);
  if (!chosen(POOL_SIZE_FLAG)) flags.push(`${POOL_SIZE_FLAG}=${servePoolSize(cpus, workers)}`);
  if (!chosen(HEAP_GROWING_FLAG)) flags.push(`${HEAP_GROWING_FLAG}=${SERVE_HEAP_GROWING_PERCENT}`);
  if (!chosen(MEMORY_REDUCER_FLAG)) flags.push(SERVE_MEMORY_REDUCER);
  if (serveCpuShare(cpus, workers) === 1 && !chosen(PARALLEL_SCAVENGE_FLAG)) {
    flags.push(SERVE_NO_PARALLEL_SCAVENGE);
  }
  return flags;
}

/**
 * Replaces this process by the same command with serve's start-time flags (`process.execve`: same
 * pid, same open stdio, same CPU affinity, so supervisors and `taskset` see no difference). Returns
 * only when no restart is needed or the platform cannot do it (no `execve` on Windows): the server
 * then runs with Node's defaults.
 */
export function restartWithServeFlags(workers = 1): void {
  const flags = serveRestartFlags(
    process.execArgv,
    process.env.NODE_OPTIONS,
    availableParallelism(),
    workers,
  );
  if (flags.length === 0) return;
  if (process.execve === undefined || process.platform === 'win32') return;
  process.execve(process.execPath, [
    process.execPath,
    ...flags,
    ...process.execArgv,
    ...process.argv.slice(1),
  ]);
}
