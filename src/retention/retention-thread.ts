/**
 * The retention thread: deletes old history through a store connection of its own, so the
 * synchronous SQLite deletes (milliseconds per batch) never run on the proxy's event loop. Started
 * by retention-worker.ts, never imported.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pino } from 'pino';
import { createJobLock } from '../cluster/job-lock.js';
import { openStoreWithoutMigrating } from '../store/open.js';
import type { ExclusiveRunner } from './exclusive-runner.js';
import type { FromRetentionThread, RetentionThreadData, ToRetentionThread } from './retention-protocol.js';
import { startRetentionScheduler } from './scheduler.js';

async function main(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('retention-thread.js runs as a worker thread only');
  const data = workerData as RetentionThreadData;
  const post = (message: FromRetentionThread): void => port.postMessage(message);
  const logger = pino(
    { level: 'trace', base: null, timestamp: false },
    { write: (line: string) => post({ t: 'log', line }) },
  );
  // The main thread has migrated the schema already.
  const store = await openStoreWithoutMigrating({ database: data.database, dataDir: data.dataDir });
  // One process of a cluster purges at a time (a lease row in the store, src/cluster/job-lock.ts).
  const jobs = createJobLock({ store });
  const runner: ExclusiveRunner = {
    run: async (name, job) => {
      const result = await jobs.runExclusive(name, job);
      return result.ran ? result.value : undefined;
    },
  };
  const scheduler = startRetentionScheduler({
    runner,
    repo: store.retention,
    policy: data.policy,
    logger,
    intervalMs: data.intervalMs,
    firstDelayMs: data.firstDelayMs,
  });
  port.on('message', (message: ToRetentionThread) => {
    if (message.t === 'run') {
      scheduler.runNow().then(
        (report) => post({ t: 'ran', id: message.id, report: report ?? null }),
        (err: unknown) =>
          post({ t: 'ran', id: message.id, error: err instanceof Error ? err.message : String(err) }),
      );
    } else {
      void scheduler
        .close()
        .then(() => jobs.close())
        .then(() => store.close())
        .finally(() => {
          post({ t: 'closed' });
          port.close();
        });
    }
  });
}

void main().catch((err: unknown) => {
  parentPort?.postMessage({
    t: 'log',
    line: JSON.stringify({
      level: 50,
      msg: `retention thread failed: ${err instanceof Error ? err.message : String(err)}`,
    }),
  } satisfies FromRetentionThread);
  process.exitCode = 1;
});
