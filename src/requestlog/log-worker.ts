import { Worker, type ResourceLimits } from 'node:worker_threads';
import type { Logger } from 'pino';
import { breachEntry, type AnomalyWriter } from '../anomalies/anomaly-writer.js';
import { errorSummary } from '../errors/summary.js';
import { compiledThread } from '../runtime/compiled-thread.js';
import type { AnomalyEntry } from '../store/records.js';
import type { Batcher, DropReason, QueueMetrics } from './batcher.js';
import { createRequestLinePrinter, type RequestLogWriter } from './batch-writer.js';
import { DropWarner } from './drop-warner.js';
import { Handover } from './handover.js';
import { LOG_BUDGETS, WORKER_HEAP_LIMITS, type LogBudgets } from './log-budgets.js';
import {
  LOG_QUEUES,
  requestQueue,
  type FromLogThread,
  type LogQueue,
  type LogThreadData,
  type ToLogThread,
} from './log-protocol.js';
import type { RequestLogRecord } from './record.js';

/**
 * The proxy thread's side of the log worker (log-thread.ts). `write` and `onUnauthorized` only
 * queue (handover.ts); every POST_INTERVAL_MS (or every MAX_POST items or MAX_POST_BYTES) the queues
 * go to the worker in one message. The worker stores them in batches through its own store
 * connection, so no database work, synchronous or not, runs on the thread that serves requests.
 */

const POST_INTERVAL_MS = 20;
const MAX_POST = 512;
const MAX_POST_BYTES = 1024 * 1024;
/** A worker that dies is started again after this delay; records wait here meanwhile. */
const RESTART_DELAY_MS = 1000;
/**
 * A worker that dies this many times in a row without storing anything is given nothing it was
 * given before (counted as lost): whatever kills it must not kill every worker after it.
 */
const MAX_FRUITLESS_RESTARTS = 2;
const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

export interface LogWorkerOptions {
  /** The store the worker opens (already migrated by the caller). */
  readonly database: string | undefined;
  readonly dataDir: string;
  readonly logger: Logger;
  /** Where the queues' depth and losses are counted (metrics.ts). */
  readonly metrics?: { queue(name: LogQueue): QueueMetrics } | undefined;
  /** `--log-requests`: one JSON line per record, printed on this thread (see createRequestLinePrinter). */
  readonly stdout?: ((line: string) => void) | undefined;
  /** The worker's batch interval (default 200 ms). */
  readonly flushIntervalMs?: number | undefined;
  /** Byte and count bounds of the queues (default LOG_BUDGETS). */
  readonly budgets?: Partial<LogBudgets> | undefined;
  readonly closeTimeoutMs?: number | undefined;
  /** The worker's heap limits (default WORKER_HEAP_LIMITS). */
  readonly resourceLimits?: ResourceLimits | undefined;
}

export interface LogWorker {
  readonly requestLog: RequestLogWriter;
  readonly anomalies: Omit<AnomalyWriter, 'settled'>;
  /** Resolves when every record, entry and usage count handed over so far is stored (or dropped). */
  flush(): Promise<void>;
  /** Flushes, closes the worker's store connection and ends the thread. */
  close(): Promise<void>;
  /**
   * Ends the worker thread at once, as a crash would (for tests of exactly that). It is started
   * again like a worker that failed.
   */
  crash(): Promise<void>;
}

export function startLogWorker(options: LogWorkerOptions): LogWorker {
  const channel = new LogChannel(options);
  const printer: Batcher<RequestLogRecord> | undefined =
    options.stdout === undefined
      ? undefined
      : createRequestLinePrinter(options.stdout, { logger: options.logger });
  const flush = async (): Promise<void> => {
    await Promise.all([channel.flush(), printer?.flush()]);
  };
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= Promise.all([channel.close(), printer?.close()]).then(() => undefined));
  return {
    requestLog: {
      write(record) {
        channel.request(record);
        printer?.push(record);
      },
      flush,
      settled: flush,
      close,
      get size() {
        return (
          channel.depth('request_log') +
          channel.depth('request_log_refused') +
          channel.depth('request_log_unmatched')
        );
      },
    },
    anomalies: {
      onUnauthorized: (attempt) => channel.anomaly(breachEntry(attempt)),
      write: (entry) => channel.anomaly(entry),
      flush,
      close,
      get size() {
        return channel.depth('anomaly_log');
      },
    },
    flush,
    close,
    crash: () => channel.crash(),
  };
}

class LogChannel {
  readonly #options: LogWorkerOptions;
  readonly #budgets: LogBudgets;
  readonly #handover: Handover;
  readonly #drops: DropWarner;
  readonly #metrics = new Map<LogQueue, QueueMetrics>();
  #worker: Worker | null = null;
  #restartTimer: NodeJS.Timeout | undefined;
  #postTimer: NodeJS.Timeout | undefined;
  /** Restarts since a worker last stored a message. */
  #fruitlessRestarts = 0;
  readonly #flushes = new Map<number, () => void>();
  #nextFlushId = 1;
  #closing = false;
  #closed: (() => void) | undefined;
  #closePromise: Promise<void> | undefined;

  constructor(options: LogWorkerOptions) {
    this.#options = options;
    this.#budgets = { ...LOG_BUDGETS, ...options.budgets };
    this.#drops = new DropWarner(options.logger);
    this.#handover = new Handover(this.#budgets, (queue, count, reason) =>
      this.#dropped(queue, count, reason),
    );
    for (const queue of LOG_QUEUES) {
      const metrics = options.metrics?.queue(queue);
      metrics?.watchDepth(() => this.depth(queue));
      // Looked up once: a flood of refusals drops items one at a time (token_share).
      if (metrics !== undefined) this.#metrics.set(queue, metrics);
    }
    this.#start();
  }

  depth(queue: LogQueue): number {
    return this.#handover.depth(queue);
  }

  request(record: RequestLogRecord): void {
    if (this.#closing) return this.#dropped(requestQueue(record), 1, 'closed');
    this.#handover.request(record);
    this.#schedule();
  }

  anomaly(entry: AnomalyEntry): void {
    if (this.#closing) return this.#dropped('anomaly_log', 1, 'closed');
    this.#handover.anomaly(entry);
    this.#schedule();
  }

  flush(): Promise<void> {
    // Closing stores everything first; after that nothing is taken any more.
    if (this.#closing) return this.#closePromise ?? Promise.resolve();
    const id = this.#nextFlushId++;
    return new Promise((resolve) => {
      this.#flushes.set(id, resolve);
      this.#post(true);
      this.#worker?.postMessage({ t: 'flush', id } satisfies ToLogThread);
    });
  }

  close(): Promise<void> {
    return (this.#closePromise ??= this.#close());
  }

  async crash(): Promise<void> {
    await this.#worker?.terminate();
  }

  #close(): Promise<void> {
    this.#closing = true;
    clearTimeout(this.#postTimer);
    clearTimeout(this.#restartTimer);
    const worker = this.#worker;
    if (worker === null) {
      this.#dropAll();
      return Promise.resolve();
    }
    this.#post(true);
    return new Promise<void>((resolve) => {
      const timeout = setTimeout(() => {
        this.#options.logger.warn('log worker did not finish in time; records still queued are lost');
        void worker.terminate();
      }, this.#options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
      const closed = (): void => {
        clearTimeout(timeout);
        this.#drops.report();
        resolve();
      };
      this.#closed = closed;
      worker.postMessage({ t: 'close' } satisfies ToLogThread);
    });
  }

  #schedule(): void {
    if (this.#handover.waiting >= MAX_POST || this.#handover.waitingBytes >= MAX_POST_BYTES) this.#post();
    else if (this.#postTimer === undefined) this.#postTimer = setTimeout(this.#onPostTimer, POST_INTERVAL_MS);
  }

  readonly #onPostTimer = (): void => {
    this.#postTimer = undefined;
    this.#post();
  };

  #post(flushing = false): void {
    const worker = this.#worker;
    if (worker === null) return;
    clearTimeout(this.#postTimer);
    this.#postTimer = undefined;
    const message = this.#handover.take(flushing);
    if (message !== undefined) worker.postMessage(message);
  }

  #start(): void {
    const data: LogThreadData = {
      database: this.#options.database,
      dataDir: this.#options.dataDir,
      flushIntervalMs: this.#options.flushIntervalMs,
      budgets: this.#budgets,
    };
    const worker = new Worker(compiledThread(import.meta.url, 'requestlog/log-thread.js', 'log worker'), {
      workerData: data,
      resourceLimits: this.#options.resourceLimits ?? WORKER_HEAP_LIMITS,
    });
    this.#worker = worker;
    worker.on('message', (message: FromLogThread) => this.#onMessage(message));
    worker.on('error', (err) => {
      this.#options.logger.error({ err: errorSummary(err) }, 'log worker failed');
    });
    worker.once('exit', () => this.#onExit(worker));
    // Records queued while no worker ran go first (those the last one did not store among them),
    // then the flushes that were waiting on the old worker: a flush answers only for what was
    // posted before it.
    this.#post(this.#flushes.size > 0);
    for (const id of this.#flushes.keys()) worker.postMessage({ t: 'flush', id } satisfies ToLogThread);
  }

  #onMessage(message: FromLogThread): void {
    switch (message.t) {
      case 'done':
        this.#fruitlessRestarts = 0;
        this.#handover.done(message.id);
        // Usage waits for the previous hand-over to be stored; it may go now.
        if (this.#handover.usagePending) this.#schedule();
        return;
      case 'flushed': {
        const resolve = this.#flushes.get(message.id);
        this.#flushes.delete(message.id);
        resolve?.();
        return;
      }
      case 'closed':
        this.#closed?.();
        return;
      case 'dropped':
        this.#dropped(message.queue, message.count, message.reason);
        return;
      case 'store_failed':
        this.#metrics.get(message.queue)?.storeFailed();
        return;
      case 'log':
        relog(this.#options.logger, message.line);
        return;
    }
  }

  #onExit(worker: Worker): void {
    if (this.#worker !== worker) return;
    this.#worker = null;
    if (this.#closing) {
      this.#dropAll();
      this.#closed?.();
      return;
    }
    this.#fruitlessRestarts += 1;
    const requeue = this.#fruitlessRestarts <= MAX_FRUITLESS_RESTARTS;
    // Records of a known token, anomaly entries and usage wait for the next worker; records where
    // no token matched that the dead one held are lost, and counted.
    this.#handover.workerLost(requeue);
    this.#drops.report();
    this.#options.logger.error(`log worker stopped; starting it again in ${RESTART_DELAY_MS} ms`);
    this.#restartTimer = setTimeout(() => this.#start(), RESTART_DELAY_MS);
    this.#restartTimer.unref();
  }

  #dropAll(): void {
    this.#handover.dropAll('closed');
    this.#drops.report();
    for (const resolve of this.#flushes.values()) resolve();
    this.#flushes.clear();
  }

  #dropped(queue: LogQueue, count: number, reason: DropReason): void {
    if (count <= 0) return;
    this.#metrics.get(queue)?.dropped(count, reason);
    this.#drops.add(queue, count, reason);
  }
}

const LEVELS: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

/** A pino line from the worker, logged again by this thread's logger with the same fields. */
export function relog(logger: Logger, line: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return;
  }
  if (typeof parsed !== 'object' || parsed === null) return;
  const { level, msg, ...fields } = parsed as { level?: unknown; msg?: unknown };
  const method = LEVELS[typeof level === 'number' ? level : 30] ?? 'info';
  logger[method](fields, typeof msg === 'string' ? msg : '');
}
