import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { errorSummary } from '../errors/summary.js';
import { relog } from '../requestlog/log-worker.js';
import { compiledThread } from '../runtime/compiled-thread.js';
import { settlesWithin } from '../runtime/settles-within.js';
import type { PurgeReport } from './purge.js';
import type { FromRetentionThread, RetentionThreadData, ToRetentionThread } from './retention-protocol.js';
import { startRetentionScheduler } from './scheduler.js';

export interface RetentionWorker {
  /** One retention pass now (or the running one), on a thread; null when another process ran it. */
  runNow(): Promise<PurgeReport | null>;
  /** Stops the timers, and a pass under way at its next batch. */
  close(): Promise<void>;
}

export interface RetentionTiming {
  /** Time between passes (default one hour). */
  readonly intervalMs?: number | undefined;
  /** Time from start to the first pass (default one minute: start-up has enough to do). */
  readonly firstDelayMs?: number | undefined;
}

/** A thread stuck in a long statement is stopped rather than waited on forever. */
const STOP_TIMEOUT_MS = 10_000;
/**
 * A thread that has answered but does not end (a handle left open) is stopped after this long, so
 * its pass settles and the next one can run.
 */
const EXIT_TIMEOUT_MS = 5_000;

/**
 * Runs retention passes on the schedule, each on a thread started for it (retention-thread.ts) that
 * ends with the pass: between passes no thread, and none of its memory, is kept.
 */
export function startRetentionWorker(
  data: RetentionThreadData,
  logger: Logger,
  timing: RetentionTiming = {},
): RetentionWorker {
  // Found now, not at the first pass an hour later: a broken install stops the start.
  const file = compiledThread(import.meta.url, 'retention/retention-thread.js', 'retention');
  let current: Worker | undefined;

  const pass = (): Promise<PurgeReport | undefined> =>
    new Promise((resolve, reject) => {
      const worker = new Worker(file, {
        workerData: data,
        resourceLimits: { maxOldGenerationSizeMb: 64 },
      });
      current = worker;
      let answer: { report: PurgeReport | undefined } | { error: Error } | undefined;
      let lingering: NodeJS.Timeout | undefined;
      worker.on('message', (message: FromRetentionThread) => {
        if (message.t === 'log') return relog(logger, message.line);
        const { error } = message;
        answer =
          error === undefined
            ? { report: message.report ?? undefined }
            : { error: Object.assign(new Error(error.message), { name: error.name, code: error.code }) };
        lingering = setTimeout(() => void worker.terminate(), EXIT_TIMEOUT_MS);
      });
      worker.on('error', (err) => {
        logger.error({ err: errorSummary(err) }, 'retention thread failed');
        answer ??= { error: err };
      });
      // Settled when the thread has ended, so a closing server never leaves one behind.
      worker.once('exit', () => {
        clearTimeout(lingering);
        current = undefined;
        if (answer === undefined) reject(new Error('retention thread stopped before answering'));
        else if ('error' in answer) reject(answer.error);
        else resolve(answer.report);
      });
      // A pass never keeps the process alive by itself; close() waits for it.
      worker.unref();
    });

  const scheduler = startRetentionScheduler({ pass, logger, ...timing });

  let closing: Promise<void> | undefined;
  return {
    async runNow() {
      return (await scheduler.runNow()) ?? null;
    },
    close() {
      closing ??= (async () => {
        const worker = current;
        worker?.postMessage({ t: 'stop' } satisfies ToRetentionThread);
        const stopped = scheduler.close();
        if (!(await settlesWithin(stopped, STOP_TIMEOUT_MS))) {
          await worker?.terminate();
          await stopped;
        }
      })();
      return closing;
    },
  };
}
