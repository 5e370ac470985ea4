import { existsSync } from 'node:fs';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import type { Logger } from 'pino';
import { breachEntry, type AnomalyWriter } from '../anomalies/anomaly-writer.js';
import { errorSummary } from '../errors/summary.js';
import type { AnomalyEntry } from '../store/records.js';
import { DEFAULT_MAX_QUEUE, type Batcher, type QueueMetrics } from './batcher.js';
import { createRequestLinePrinter, type RequestLogWriter } from './batch-writer.js';
import {
  packRequest,
  REQUEST_WIDTH,
  type FromLogThread,
  type LogQueue,
  type LogThreadData,
  type PackedValue,
  type ToLogThread,
} from './log-protocol.js';
import type { RequestLogRecord } from './record.js';

/**
 * The proxy thread's side of the log worker (log-thread.ts). `write` and `onUnauthorized` only
 * push onto an array; every POST_INTERVAL_MS (or every MAX_POST items) the arrays go to the worker
 * in one message. The worker stores them in batches through its own store connection, so no
 * database work, synchronous or not, runs on the thread that serves requests.
 */

const POST_INTERVAL_MS = 20;
const MAX_POST = 512;
/** A worker that dies is started again after this delay; records wait here meanwhile. */
const RESTART_DELAY_MS = 1000;
const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;
/**
 * The worker's heap, kept small: it holds at most its queues (100,000 records of a few hundred bytes
 * each) and one batch. A worker that runs out is restarted like one that failed (its queue is lost
 * and counted as dropped). The young generation is what V8 grows to tens of MB by default.
 */
const THREAD_LIMITS = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 96 } as const;

export interface LogWorkerOptions {
  /** The store the worker opens (already migrated by the caller). */
  readonly database: string | undefined;
  readonly dataDir: string;
  readonly logger: Logger;
  readonly metrics?: { readonly requestLog: QueueMetrics; readonly anomalies: QueueMetrics } | undefined;
  /** `--log-requests`: one JSON line per record, printed on this thread (see createRequestLinePrinter). */
  readonly stdout?: ((line: string) => void) | undefined;
  /** The worker's batch interval (default 200 ms). */
  readonly flushIntervalMs?: number | undefined;
  /** Items waiting on this side before the oldest are dropped (the worker has its own bound too). */
  readonly maxQueue?: number | undefined;
  readonly closeTimeoutMs?: number | undefined;
  /** The worker's heap limits (default THREAD_LIMITS). */
  readonly resourceLimits?: ResourceLimits | undefined;
}

export interface LogWorker {
  readonly requestLog: RequestLogWriter;
  readonly anomalies: AnomalyWriter;
  /** Resolves when every record and entry handed over so far is stored (or dropped). */
  flush(): Promise<void>;
  /** Flushes, closes the worker's store connection and ends the thread. */
  close(): Promise<void>;
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
      close,
      get size() {
        return channel.depth('request_log');
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
  };
}

class LogChannel {
  readonly #options: LogWorkerOptions;
  readonly #maxQueue: number;
  #worker: Worker | null = null;
  #restartTimer: NodeJS.Timeout | undefined;
  #postTimer: NodeJS.Timeout | undefined;
  /** Packed request records (packRequest), REQUEST_WIDTH values each. */
  #requests: PackedValue[] = [];
  #anomalies: AnomalyEntry[] = [];
  /** What the worker last reported as waiting in its own queues. */
  readonly #workerDepth: Record<LogQueue, number> = { request_log: 0, anomaly_log: 0 };
  readonly #flushes = new Map<number, () => void>();
  #nextFlushId = 1;
  #closing = false;
  #closed: (() => void) | undefined;
  #closePromise: Promise<void> | undefined;

  constructor(options: LogWorkerOptions) {
    this.#options = options;
    this.#maxQueue = Math.max(1, options.maxQueue ?? DEFAULT_MAX_QUEUE);
    options.metrics?.requestLog.watchDepth(() => this.depth('request_log'));
    options.metrics?.anomalies.watchDepth(() => this.depth('anomaly_log'));
    this.#start();
  }

  depth(queue: LogQueue): number {
    return (
      (queue === 'request_log' ? this.#requestCount() : this.#anomalies.length) + this.#workerDepth[queue]
    );
  }

  request(record: RequestLogRecord): void {
    if (this.#closing) return this.#dropped('request_log', 1);
    packRequest(this.#requests, record);
    const count = this.#requestCount();
    if (count > this.#maxQueue) this.#dropped('request_log', trimOldest(this.#requests, REQUEST_WIDTH));
    this.#schedule(count);
  }

  anomaly(entry: AnomalyEntry): void {
    if (this.#closing) return this.#dropped('anomaly_log', 1);
    this.#anomalies.push(entry);
    if (this.#anomalies.length > this.#maxQueue) this.#dropped('anomaly_log', trimOldest(this.#anomalies, 1));
    this.#schedule(this.#anomalies.length);
  }

  flush(): Promise<void> {
    // Closing stores everything first; after that nothing is taken any more.
    if (this.#closing) return this.#closePromise ?? Promise.resolve();
    const id = this.#nextFlushId++;
    return new Promise((resolve) => {
      this.#flushes.set(id, resolve);
      this.#post();
      this.#worker?.postMessage({ t: 'flush', id } satisfies ToLogThread);
    });
  }

  close(): Promise<void> {
    return (this.#closePromise ??= this.#close());
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
    this.#post();
    return new Promise<void>((resolve) => {
      const timeout = setTimeout(() => {
        this.#options.logger.warn('log worker did not finish in time; records still queued are lost');
        void worker.terminate();
      }, this.#options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
      this.#closed = () => {
        clearTimeout(timeout);
        resolve();
      };
      worker.postMessage({ t: 'close' } satisfies ToLogThread);
    });
  }

  #requestCount(): number {
    return this.#requests.length / REQUEST_WIDTH;
  }

  #schedule(length: number): void {
    if (length >= MAX_POST) this.#post();
    else if (this.#postTimer === undefined) this.#postTimer = setTimeout(this.#onPostTimer, POST_INTERVAL_MS);
  }

  readonly #onPostTimer = (): void => {
    this.#postTimer = undefined;
    this.#post();
  };

  #post(): void {
    const worker = this.#worker;
    if (worker === null || (this.#requests.length === 0 && this.#anomalies.length === 0)) return;
    clearTimeout(this.#postTimer);
    this.#postTimer = undefined;
    const message: ToLogThread = { t: 'records', requests: this.#requests, anomalies: this.#anomalies };
    // Counted as the worker's until its next depth report (which may cross this message in flight:
    // the depth is an estimate between reports, exact once the worker is idle).
    this.#workerDepth.request_log += this.#requestCount();
    this.#workerDepth.anomaly_log += this.#anomalies.length;
    this.#requests = [];
    this.#anomalies = [];
    worker.postMessage(message);
  }

  #start(): void {
    const data: LogThreadData = {
      database: this.#options.database,
      dataDir: this.#options.dataDir,
      flushIntervalMs: this.#options.flushIntervalMs,
    };
    const worker = new Worker(threadFile(), {
      workerData: data,
      resourceLimits: this.#options.resourceLimits ?? THREAD_LIMITS,
    });
    this.#worker = worker;
    worker.on('message', (message: FromLogThread) => this.#onMessage(message));
    worker.on('error', (err) => {
      this.#options.logger.error({ err: errorSummary(err) }, 'log worker failed');
    });
    worker.once('exit', () => this.#onExit(worker));
    // Records queued while no worker ran go first, then the flushes that were waiting on the old
    // worker: a flush answers only for what was posted before it.
    this.#post();
    for (const id of this.#flushes.keys()) worker.postMessage({ t: 'flush', id } satisfies ToLogThread);
  }

  #onMessage(message: FromLogThread): void {
    switch (message.t) {
      case 'flushed': {
        const resolve = this.#flushes.get(message.id);
        this.#flushes.delete(message.id);
        resolve?.();
        return;
      }
      case 'closed':
        // The worker stored (or itself counted as dropped) everything it held.
        this.#workerDepth.request_log = 0;
        this.#workerDepth.anomaly_log = 0;
        this.#closed?.();
        return;
      case 'depth':
        this.#workerDepth.request_log = message.request_log;
        this.#workerDepth.anomaly_log = message.anomaly_log;
        return;
      case 'dropped':
        this.#metrics(message.queue)?.dropped(message.count);
        return;
      case 'store_failed':
        this.#metrics(message.queue)?.storeFailed();
        return;
      case 'log':
        relog(this.#options.logger, message.line);
        return;
    }
  }

  #onExit(worker: Worker): void {
    if (this.#worker !== worker) return;
    this.#worker = null;
    // Whatever the worker held is lost; it is counted so the metrics show it.
    this.#dropped('request_log', this.#workerDepth.request_log);
    this.#dropped('anomaly_log', this.#workerDepth.anomaly_log);
    this.#workerDepth.request_log = 0;
    this.#workerDepth.anomaly_log = 0;
    if (this.#closing) {
      this.#dropAll();
      this.#closed?.();
      return;
    }
    this.#options.logger.error(`log worker stopped; starting it again in ${RESTART_DELAY_MS} ms`);
    this.#restartTimer = setTimeout(() => this.#start(), RESTART_DELAY_MS);
    this.#restartTimer.unref();
  }

  #dropAll(): void {
    this.#dropped('request_log', this.#requestCount());
    this.#dropped('anomaly_log', this.#anomalies.length);
    this.#requests = [];
    this.#anomalies = [];
    for (const resolve of this.#flushes.values()) resolve();
    this.#flushes.clear();
  }

  #dropped(queue: LogQueue, count: number): void {
    if (count > 0) this.#metrics(queue)?.dropped(count);
  }

  #metrics(queue: LogQueue): QueueMetrics | undefined {
    return queue === 'request_log' ? this.#options.metrics?.requestLog : this.#options.metrics?.anomalies;
  }
}

/**
 * Drops the oldest tenth of a full queue of items `width` values wide at once, so an overflowing
 * queue costs O(1) per write. Returns the number of items dropped.
 */
function trimOldest(queue: unknown[], width: number): number {
  const count = Math.max(1, Math.ceil(queue.length / width / 10));
  queue.splice(0, count * width);
  return count;
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
function relog(logger: Logger, line: string): void {
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

/**
 * The compiled worker beside this module; when this module runs from TypeScript sources (the test
 * runner), the one `npm run build` put in dist/.
 */
function threadFile(): URL {
  const beside = new URL('./log-thread.js', import.meta.url);
  if (existsSync(beside)) return beside;
  const built = new URL('../../dist/requestlog/log-thread.js', import.meta.url);
  if (existsSync(built)) return built;
  throw new Error('log worker: dist/requestlog/log-thread.js is missing; run `npm run build`');
}
