/**
 * One retention pass on a thread of its own, through a store connection of its own, so the
 * synchronous SQLite deletes (milliseconds per batch) never run on the proxy's event loop. The thread
 * exists only for its pass: started by retention-worker.ts for each one, it answers with the report
 * and ends, so the ~20 MB of an idle V8 isolate are not held between hourly passes. Never imported.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { createJobLock, type JobLock } from '../cluster/job-lock.js';
import { startSharedClock } from '../cluster/shared-clock.js';
import { errorSummary } from '../errors/summary.js';
import { openStoreWithoutMigrating } from '../store/open.js';
import type { Store } from '../store/store.js';
import { purgeOnce } from './purge.js';
import type { FromRetentionThread, RetentionThreadData, ToRetentionThread } from './retention-protocol.js';

/** The job lock's name: one process of a cluster purges at a time. */
const RETENTION_JOB = 'retention';
/** Rows per delete statement: each is one short write, so other writers wait at most one batch. */
const BATCH_SIZE = 2000;
/** Between batches, so the log writer gets the SQLite write lock in between. */
const PAUSE_MS = 20;
/** Free pages returned to the file system per step (SQLite). */
const VACUUM_PAGES = 2000;

async function main(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('retention-thread.js runs as a worker thread only');
  const data = workerData as RetentionThreadData;
  const post = (message: FromRetentionThread): void => port.postMessage(message);
  let stopped = false;
  port.on('message', (message: ToRetentionThread) => {
    if (message.t === 'stop') stopped = true;
  });
  let store: Store | undefined;
  let jobs: JobLock | undefined;
  try {
    // The main thread has migrated the schema already.
    store = await openStoreWithoutMigrating({ database: data.database, dataDir: data.dataDir });
    const opened = store;
    // One process of a cluster purges at a time (a lease row in the store, src/cluster/job-lock.ts).
    // Its lease and cut-off on the cluster's one clock (the database's), as in the main thread.
    const clock = await startSharedClock({ store: opened, refreshMs: 0 });
    jobs = createJobLock({ store: opened, now: clock.now });
    const result = await jobs.runExclusive(RETENTION_JOB, () =>
      purgeOnce({
        repo: opened.retention,
        policy: data.policy,
        now: clock.now(),
        batchSize: BATCH_SIZE,
        pause: () => sleep(PAUSE_MS),
        vacuumPages: VACUUM_PAGES,
        stopped: () => stopped,
      }),
    );
    post({ t: 'ran', report: result.ran ? result.value : null });
  } catch (err) {
    post({
      t: 'ran',
      error: { message: err instanceof Error ? err.message : String(err), ...errorSummary(err) },
    });
  } finally {
    // Giving up the lease or closing may fail with the database; the pass's answer is already sent.
    await jobs?.close().catch(() => undefined);
    await store?.close().catch(() => undefined);
    port.close();
  }
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
