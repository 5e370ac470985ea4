/** Node flags the bench gives the systems it runs on CPU 0, besides the ones they choose themselves. */
import { join } from 'node:path';
import { ROOT } from '../settings.js';

/** bench/full-gc-on-signal.ts in each of them: SIGUSR2 runs one full collection (see there). */
export const FULL_GC_ON_SIGNAL: readonly string[] = [
  '--import',
  join(ROOT, 'dist-bench/bench/full-gc-on-signal.js'),
];

/** One regular full collection on the main thread of `pid`, started with FULL_GC_ON_SIGNAL. */
export function requestFullGc(pid: number): void {
  process.kill(pid, 'SIGUSR2');
}

/** Extra node flags from the environment variable `name` (space-separated), for diagnosis runs. */
export function diagnosisNodeArgs(name: string): string[] {
  const extra = process.env[name]?.trim();
  return extra === undefined || extra === '' ? [] : extra.split(/\s+/);
}
