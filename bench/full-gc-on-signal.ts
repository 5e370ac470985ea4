/**
 * Loaded into every system the bench runs on CPU 0 (`--import`, bench/load/bench.ts): SIGUSR2 makes
 * its main thread run one regular full collection, which the steady phase asks for once the load
 * has settled (bench/phases/steady.ts, `settle`). Nothing else changes in the process; Node reserves
 * SIGUSR1 for the inspector, SIGUSR2 is free.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) {
  // `gc` exists only in contexts made after the flag is set (as src/server/idle-memory.ts takes it).
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options: { type: 'major'; execution: 'sync' }) => void;
  process.on('SIGUSR2', () => gc({ type: 'major', execution: 'sync' }));
}
