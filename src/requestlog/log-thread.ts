/**
 * The log worker: a thread of its own that stores request-log records and anomaly-log entries
 * through its own store connection. Kysely's query building and better-sqlite3's synchronous
 * writes (several milliseconds per batch) would otherwise stall the proxy's event loop every
 * flush; here they stall nothing but this thread. Started by log-worker.ts, never imported.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { pino } from 'pino';
import { createAnomalyWriter } from '../anomalies/anomaly-writer.js';
import { errorName } from '../errors/summary.js';
import { openStoreWithoutMigrating } from '../store/open.js';
import { logReduction, startIdleMemoryReducer } from '../runtime/idle-memory.js';
import type { QueueMetrics } from './batcher.js';
import { LOG_WORKER_IDLE_RULE } from './log-budgets.js';
import { createRequestLogWriter, createUsageWriter } from './batch-writer.js';
import {
  decodePacked,
  unpackRequests,
  type FromLogThread,
  type LogQueue,
  type LogThreadData,
  type ToLogThread,
} from './log-protocol.js';

/**
 * This thread runs 10 nice steps below the process. When the proxy thread and this one both want
 * the CPU, the scheduler gives the proxy ~10 times the share: requests are served first and logs
 * catch up (the queue is bounded; see batcher.ts).
 */
const LOG_THREAD_NICE_STEP = 10;
const LOWEST_PRIORITY = 19;

/** Linux only (the thread's own id from /proc/thread-self); elsewhere the thread keeps its priority. */
function lowerOwnPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    // Relative to the process's own nice value, so a server already run at low priority never has
    // its log thread raised above it.
    if (Number.isInteger(tid) && tid > 0)
      setPriority(tid, Math.min(LOWEST_PRIORITY, getPriority(tid) + LOG_THREAD_NICE_STEP));
  } catch {
    // Not Linux, or not allowed: the logs are still written, only without the lower priority.
  }
}

async function main(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('log-thread.js runs as a worker thread only');
  lowerOwnPriority();
  const data = workerData as LogThreadData;
  const post = (message: FromLogThread): void => port.postMessage(message);
  // Every line goes to the main thread's logger, so there is one log stream with one configuration.
  const logger = pino(
    { level: 'trace', base: null, timestamp: false },
    { write: (line: string) => post({ t: 'log', line }) },
  );

  const metricsOf = (queue: LogQueue): QueueMetrics => ({
    watchDepth: () => undefined,
    dropped: (count, reason, own) => post({ t: 'dropped', queue: own ?? queue, count, reason }),
    storeFailed: () => post({ t: 'store_failed', queue }),
  });

  // The main thread has migrated the schema already; this connection only writes rows.
  const store = await openStoreWithoutMigrating({
    database: data.database,
    dataDir: data.dataDir,
    logWriter: true,
  });
  const { budgets } = data;
  const batching = { logger, flushIntervalMs: data.flushIntervalMs, maxQueue: budgets.maxRecords };
  // The proxy's thread keeps each queue within its budget until stored, so these bounds are only
  // reached should it not; they keep this heap bounded all the same.
  // Records of a known token arrive in one payload, forwarded and refused: two budgets there.
  const keyed = createRequestLogWriter({
    store,
    ...batching,
    maxQueue: 2 * budgets.maxRecords,
    maxBytes: budgets.keyedBytes + budgets.refusedBytes,
    metrics: metricsOf('request_log'),
  });
  const unmatched = createRequestLogWriter({
    store,
    ...batching,
    name: 'request_log_unmatched',
    maxBytes: budgets.unmatchedBytes,
    metrics: metricsOf('request_log_unmatched'),
  });
  const anomalies = createAnomalyWriter({
    store,
    ...batching,
    maxBytes: budgets.anomalyBytes,
    metrics: metricsOf('anomaly_log'),
  });
  const usage = createUsageWriter({ store, ...batching, metrics: metricsOf('usage') });
  const writers = [keyed, unmatched, anomalies, usage];
  /** Answers to `records` messages not sent yet; a flush waits for them. */
  const answers = new Set<Promise<void>>();

  // This thread's heap grows with the records of a busy spell, and most with a backlog of them;
  // the work counted is records, whatever the size of the hand-overs they came in.
  let received = 0;
  const reducer = startIdleMemoryReducer(() => received, {
    rule: LOG_WORKER_IDLE_RULE,
    onReduced: logReduction(logger, 'log worker'),
  });

  port.on('message', (message: ToLogThread) => {
    switch (message.t) {
      case 'records': {
        const keyedRecords = unpackRequests(decodePacked(message.keyed));
        const unmatchedRecords = unpackRequests(message.unmatched);
        for (const record of keyedRecords) keyed.write(record);
        for (const record of unmatchedRecords) unmatched.write(record);
        for (const entry of message.anomalies) anomalies.write(entry);
        received += keyedRecords.length + unmatchedRecords.length + message.anomalies.length;
        if (message.usage.length > 0) usage.write(message.usage);
        // Stored at the usual pace; the proxy's thread keeps what it must not lose until then.
        const answer = Promise.all(writers.map((writer) => writer.settled())).then(() => {
          answers.delete(answer);
          post({ t: 'done', id: message.id });
        });
        answers.add(answer);
        return;
      }
      case 'flush':
        void Promise.all(writers.map((writer) => writer.flush()))
          .then(() => Promise.all(answers))
          .then(() => post({ t: 'flushed', id: message.id }));
        return;
      case 'close':
        void Promise.all(writers.map((writer) => writer.close()))
          .then(() => Promise.all(answers))
          .then(() => store.close())
          .catch((err: unknown) =>
            logger.error({ err: errorName(err) }, 'log worker: closing the store failed'),
          )
          .finally(() => {
            reducer.stop();
            post({ t: 'closed' });
            port.close();
          });
        return;
    }
  });
}

main().catch((err: unknown) => {
  // Surfaces as the Worker's 'error' event on the main thread, which restarts the worker.
  throw err;
});
