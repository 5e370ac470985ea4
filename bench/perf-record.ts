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
  'processes with their kernel time: root, or kernel.perf_event_paranoid at most 1 and ' +
  'kernel.kptr_restrict 0';

/**
 * Runs `fn` while perf samples every thread of `pids` on the cpu-clock (CPU time only, ~1 kHz) into
 * `file`; perf is stopped after it, also when it throws, and must have recorded until then.
 */
export async function withPerfRecord<T>(
  children: Children,
  pids: readonly number[],
  file: string,
  fn: () => Promise<T>,
): Promise<T> {
  const recorder = await startPerfRecord(children, pids, file);
  let result: T;
  try {
    result = await fn();
  } finally {
    await children.stop(recorder, 10_000);
  }
  // perf writes its file and re-raises the signal it was stopped with; anything else means it died.
  const code = await recorder.exited;
  if (code !== 0 && code !== 'SIGTERM') {
    throw new Error(
      `perf record ended with ${String(code)}: ${recorder.stderr.trim().slice(-400)}\n${PERF_NEEDS}`,
    );
  }
  return result;
}

async function startPerfRecord(children: Children, pids: readonly number[], file: string): Promise<Child> {
  let child: Child;
  try {
    child = children.start('perf record', 'perf', [
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
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${PERF_NEEDS}`);
  }
  // perf says nothing while it records; one that cannot start exits at once.
  let timer: NodeJS.Timeout | undefined;
  const early = await Promise.race([
    child.exited,
    new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 1000))),
  ]);
  clearTimeout(timer);
  if (early !== undefined) {
    throw new Error(
      `perf record did not start (${String(early)}): ${child.stderr.trim().slice(-400)}\n${PERF_NEEDS}`,
    );
  }
  return child;
}

/**
 * Reads `file` through `perf script` and tallies the samples of each of `pids` (others are dropped).
 * `unparsed` counts lines that are not samples at all: a change in perf's output would show there.
 */
export async function perfTallies(
  children: Children,
  file: string,
  pids: readonly number[],
): Promise<{ tallies: Map<number, PerfTally>; unparsed: number }> {
  const tallies = new Map(pids.map((pid) => [pid, emptyTally()] as const));
  let unparsed = 0;
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
    if (sample === undefined) {
      if (line.trim() !== '') unparsed++;
      continue;
    }
    const tally = tallies.get(sample.pid);
    if (tally !== undefined) addSample(tally, sample);
  }
  const code = await child.exited;
  if (code !== 0) throw new Error(`perf script failed (${String(code)}): ${child.stderr.trim().slice(-400)}`);
  return { tallies, unparsed };
}
