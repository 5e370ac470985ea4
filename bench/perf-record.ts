/**
 * `--perf`: Linux perf's CPU-time samples of the proxy and the reference forwarder over the `cpu`
 * phase, sorted into kinds of work (bench/perf-rules.ts) and scaled to µs per forwarded request.
 * Diagnosis only: a run with `--perf` measures the same processes with a sampler attached.
 */
import { createInterface } from 'node:readline';
import type { Child, Children } from './procs.js';
import { addSample, emptyTally, parsePerfLine, type PerfTally } from './perf-rules.js';

export const PERF_NEEDS =
  '--perf needs Linux perf (Debian: apt-get install linux-perf) and the right to sample these ' +
  'processes with their kernel time: root, or kernel.perf_event_paranoid at most 1';

/**
 * Samples every thread of `pids` on the cpu-clock (CPU time only, ~1 kHz) into `file` until the
 * returned child is stopped (SIGTERM: perf writes the file and exits).
 */
export async function startPerfRecord(
  children: Children,
  pids: readonly number[],
  file: string,
): Promise<Child> {
  const child = children.start('perf record', 'perf', [
    'record',
    // No copies of the sampled binaries in ~/.debug (Node's alone is ~100 MB a run).
    '--no-buildid-cache',
    '-e',
    'cpu-clock',
    '-F',
    '997',
    '-p',
    pids.join(','),
    '-o',
    file,
  ]);
  // perf says nothing while it records; one that cannot start exits at once.
  const early = await Promise.race([
    child.exited,
    new Promise<undefined>((r) => setTimeout(() => r(undefined), 1000)),
  ]);
  if (early !== undefined) {
    throw new Error(
      `perf record did not start (${String(early)}): ${child.stderr.trim().slice(-400)}\n${PERF_NEEDS}`,
    );
  }
  return child;
}

/** Reads `file` through `perf script` and tallies the samples of each of `pids` (others are dropped). */
export async function perfTallies(
  children: Children,
  file: string,
  pids: readonly number[],
): Promise<Map<number, PerfTally>> {
  const tallies = new Map(pids.map((pid) => [pid, emptyTally()] as const));
  const child = children.start('perf script', 'perf', [
    'script',
    '-i',
    file,
    '-F',
    'comm,pid,tid,ip,sym,dso',
  ]);
  const stdout = child.proc.stdout;
  if (stdout === null) throw new Error('perf script: no output stream');
  for await (const line of createInterface({ input: stdout, crlfDelay: Infinity })) {
    const sample = parsePerfLine(line);
    if (sample === undefined) continue;
    const tally = tallies.get(sample.pid);
    if (tally !== undefined) addSample(tally, sample);
  }
  const code = await child.exited;
  if (code !== 0) throw new Error(`perf script failed (${String(code)}): ${child.stderr.trim().slice(-400)}`);
  return tallies;
}
