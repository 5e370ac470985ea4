import type { Logger } from 'pino';
import { settlesWithin } from '../runtime/settles-within.js';
import { StoreUnavailableError } from '../store/errors.js';
import type { LogQueue } from './log-protocol.js';

/**
 * A bounded in-memory queue drained in batches by a background timer: the proxy's records reach the
 * database without the proxy ever waiting on it. Shared by the request log and the anomaly log.
 */

/**
 * Why records were dropped (the `reason` label of tokenproxy_log_dropped_total):
 * - `queue_full`: the queue's count or byte bound was reached (oldest dropped first);
 * - `store_failed`: the store kept refusing a batch for a reason that is not an outage;
 * - `worker_lost`: held by a log worker that died (only records that are not kept until stored);
 * - `closed`: written after shutdown began, or still queued when it timed out;
 * - `token_share`: one token already held its share of a queue shared by tokens (refused records of
 *   a known token, anomaly entries; token-shares.ts): dropped on arrival, other tokens' items kept.
 */
export type DropReason = 'queue_full' | 'store_failed' | 'worker_lost' | 'closed' | 'token_share';
export const DROP_REASONS: readonly DropReason[] = [
  'queue_full',
  'store_failed',
  'worker_lost',
  'closed',
  'token_share',
];

/** Counters a batcher reports, so operators see a backlog or losses before anyone asks. */
export interface QueueMetrics {
  /** Called once, with a function read at scrape time. */
  watchDepth(depth: () => number): void;
  /** `queue`: the item's own queue label, for a batcher that stores several kinds (`queueOf`). */
  dropped(count: number, reason: DropReason, queue?: LogQueue): void;
  storeFailed(): void;
}

export interface BatcherOptions<T> {
  /** For log lines and metrics: `request_log`, `anomaly_log`. */
  readonly name: string;
  /** Stores one batch; a rejection keeps the batch for a retry. */
  readonly handle: (batch: readonly T[]) => Promise<void>;
  readonly logger: Logger;
  readonly flushIntervalMs?: number | undefined;
  readonly maxBatch?: number | undefined;
  /** Beyond this many queued items the oldest are dropped. */
  readonly maxQueue?: number | undefined;
  /**
   * Beyond this many queued bytes (as `sizeOf` estimates them) the oldest are dropped too: a count
   * bound alone lets a flood of large records (16 KiB paths) fill the heap.
   */
  readonly maxBytes?: number | undefined;
  readonly sizeOf?: ((item: T) => number) | undefined;
  /**
   * Attempts for a batch that keeps failing with an error that is not `isTransient`; it is then
   * dropped, so one unstorable batch cannot stop everything behind it.
   */
  readonly maxAttempts?: number | undefined;
  /** Errors worth retrying forever (the database is down); the queue bound caps what waits. */
  readonly isTransient?: ((error: unknown) => boolean) | undefined;
  /** How long `close()` waits for a store that does not answer before giving up on the rest. */
  readonly closeTimeoutMs?: number | undefined;
  readonly metrics?: QueueMetrics | undefined;
  /**
   * The queue label of an item, when one batcher stores items of several (the request log's
   * forwarded and refused records share a table): its losses are counted under each item's own.
   */
  readonly queueOf?: ((item: T) => LogQueue) | undefined;
}

export interface Batcher<T> {
  /** O(1); never throws, never waits. */
  push(item: T): void;
  /** Resolves when every item pushed so far is handled or dropped. */
  flush(): Promise<void>;
  /** Like flush, but without hurrying: the batches go at their usual interval. */
  settled(): Promise<void>;
  /** Flushes (up to `closeTimeoutMs`) and stops; later pushes are dropped. */
  close(): Promise<void>;
  /** Items queued or in the batch being handled. */
  readonly size: number;
}

export const DEFAULT_FLUSH_INTERVAL_MS = 200;
export const DEFAULT_MAX_BATCH = 500;
export const DEFAULT_MAX_QUEUE = 100_000;
const DEFAULT_MAX_ATTEMPTS = 5;
const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;
/** Retries back off up to this delay, which also bounds the warnings a dead database causes. */
const MAX_RETRY_DELAY_MS = 5_000;
/** A flood drops records continuously: one warning per this interval says how many. */
export const DROP_WARNING_INTERVAL_MS = 10_000;

export function createBatcher<T>(options: BatcherOptions<T>): Batcher<T> {
  const { name, handle, logger, metrics, queueOf } = options;
  const interval = options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS;
  const maxBatch = Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH);
  const maxQueue = Math.max(1, options.maxQueue ?? DEFAULT_MAX_QUEUE);
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
  const sizeOf = options.sizeOf ?? (() => 0);
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const isTransient = options.isTransient ?? (() => false);
  const closeTimeoutMs = options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS;

  // Items live in `queue` from index `head` on; the consumed prefix is cut off now and then, so
  // taking a batch does not shift the whole array.
  let queue: T[] = [];
  let head = 0;
  let queuedBytes = 0;
  let batch: readonly T[] | undefined;
  let attempts = 0;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let closed = false;
  let closing: Promise<void> | undefined;
  let droppedAfterClose = 0;
  let droppedSinceWarning = 0;
  let lastWarning = Number.NEGATIVE_INFINITY;
  // Every pushed item is eventually counted as done (stored or dropped); flush waits on these.
  let pushed = 0;
  let done = 0;
  let waiters: { until: number; resolve: () => void }[] = [];

  const queued = (): number => queue.length - head;
  const pending = (): number => queued() + (batch?.length ?? 0);
  metrics?.watchDepth(pending);

  function finish(count: number): void {
    done += count;
    if (waiters.length === 0) return;
    const ready = waiters.filter((waiter) => waiter.until <= done);
    waiters = waiters.filter((waiter) => waiter.until > done);
    for (const waiter of ready) waiter.resolve();
  }

  /**
   * Counts the loss of `items` (each under its own queue when `queueOf` is given). `reported`: the
   * caller logs this loss itself, so the next "dropped" warning leaves it out.
   */
  function drop(items: readonly T[], reason: DropReason, reported = false): void {
    const count = items.length;
    if (count === 0) return;
    if (!reported) droppedSinceWarning += count;
    if (metrics !== undefined) {
      if (queueOf === undefined) metrics.dropped(count, reason);
      else for (const [queue, n] of countBy(items, queueOf)) metrics.dropped(n, reason, queue);
    }
    finish(count);
  }

  /** At most one line per DROP_WARNING_INTERVAL_MS, however fast records are dropped. */
  function warnDropped(): void {
    if (droppedSinceWarning === 0) return;
    // Monotonic: a wall clock stepped back must not silence the warnings for the step.
    const now = performance.now();
    if (now - lastWarning < DROP_WARNING_INTERVAL_MS) return;
    lastWarning = now;
    logger.warn({ queue: name, dropped: droppedSinceWarning }, `${name}: dropped records`);
    droppedSinceWarning = 0;
  }

  function schedule(delay: number, replace = false): void {
    if (closed) return;
    if (timer !== undefined) {
      if (!replace) return;
      clearTimeout(timer);
    }
    timer = setTimeout(() => {
      timer = undefined;
      void run();
    }, delay);
    // A pending flush must never keep the process alive; shutdown flushes explicitly.
    timer.unref();
  }

  /** Cuts off the consumed prefix once it outweighs the rest: amortised O(1), memory bounded. */
  function compact(): void {
    if (head === queue.length) {
      queue = [];
      head = 0;
    } else if (head > 1024 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
  }

  function take(): readonly T[] {
    const end = Math.min(queue.length, head + maxBatch);
    const taken = queue.slice(head, end);
    head = end;
    compact();
    if (maxBytes !== Number.POSITIVE_INFINITY) for (const item of taken) queuedBytes -= sizeOf(item);
    return taken;
  }

  /** Drops the oldest queued items while a bound is exceeded; returns them. */
  function trim(): T[] {
    const from = head;
    while (queued() > 0 && (queued() > maxQueue || queuedBytes > maxBytes)) {
      if (maxBytes !== Number.POSITIVE_INFINITY) queuedBytes -= sizeOf(queue[head] as T);
      head += 1;
    }
    const dropped = queue.slice(from, head);
    if (queued() === 0) queuedBytes = 0;
    compact();
    return dropped;
  }

  /** Handles batches until the queue is empty or a batch fails; one run at a time. */
  function run(): Promise<void> {
    running ??= drain().finally(() => {
      running = undefined;
    });
    return running;
  }

  async function drain(): Promise<void> {
    warnDropped();
    for (;;) {
      batch ??= queued() > 0 ? take() : undefined;
      if (batch === undefined) return;
      try {
        await handle(batch);
      } catch (error) {
        failed(batch, error);
        return;
      }
      finish(batch.length);
      batch = undefined;
      attempts = 0;
      failures = 0;
    }
  }

  function failed(current: readonly T[], error: unknown): void {
    metrics?.storeFailed();
    failures += 1;
    const transient = isTransient(error);
    if (!transient) attempts += 1;
    const reason = error instanceof Error ? error.message : String(error);
    // Counts and the error only: never the records, which name IPs and origins.
    if (!transient && attempts >= maxAttempts) {
      logger.error(
        { queue: name, records: current.length, attempts, reason },
        `${name}: giving up on a batch that keeps failing`,
      );
      batch = undefined;
      attempts = 0;
      failures = 0;
      drop(current, 'store_failed', true);
      schedule(interval, true);
      return;
    }
    logger.warn(
      { queue: name, records: current.length, queued: queued(), failures, reason },
      `${name}: storing a batch failed; it will be retried`,
    );
    // Replaces the timer a write may have set: while failing, only the back-off decides the next try.
    schedule(Math.min(interval * 2 ** (failures - 1), MAX_RETRY_DELAY_MS), true);
  }

  function settled(): Promise<void> {
    const until = pushed;
    if (done >= until) return Promise.resolve();
    return new Promise<void>((resolve) => waiters.push({ until, resolve }));
  }

  function flush(): Promise<void> {
    const reached = settled();
    // Start at once unless a retry is waiting out its back-off.
    if (done < pushed && failures === 0) void run();
    return reached;
  }

  async function shutDown(): Promise<void> {
    // Whatever is still queued gets one immediate attempt, whatever the back-off.
    failures = 0;
    const inTime = await settlesWithin(flush(), closeTimeoutMs);
    closed = true;
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (!inTime) {
      // A batch still in the store's hands may yet land; the queue behind it will not.
      const lost = queue.slice(head);
      queue = [];
      head = 0;
      queuedBytes = 0;
      drop(lost, 'closed', true);
      logger.error({ queue: name, records: pending() + lost.length }, `${name}: not stored before shutdown`);
    }
  }

  return {
    push(item: T): void {
      pushed += 1;
      if (closed) {
        if (droppedAfterClose === 0) logger.warn({ queue: name }, `${name}: closed; dropping later records`);
        droppedAfterClose += 1;
        drop([item], 'closed', true);
        return;
      }
      queue.push(item);
      if (maxBytes !== Number.POSITIVE_INFINITY) queuedBytes += sizeOf(item);
      if (queued() > maxQueue || queuedBytes > maxBytes) drop(trim(), 'queue_full');
      // While failing, the retry timer is already set and must not be brought forward.
      if (failures === 0) schedule(interval);
    },
    flush,
    settled,
    close(): Promise<void> {
      closing ??= shutDown();
      return closing;
    },
    get size(): number {
      return pending();
    },
  };
}

/** What a log writer lets its creator tune; the rest is fixed by the log it writes. */
export type BatchingOptions = Omit<
  BatcherOptions<never>,
  'name' | 'handle' | 'isTransient' | 'maxBytes' | 'sizeOf' | 'queueOf'
>;

/** A batcher writing to the store: an unreachable database is waited out, never a reason to drop. */
export function createStoreBatcher<T>(
  name: string,
  handle: (batch: readonly T[]) => Promise<void>,
  options: BatchingOptions,
): Batcher<T> {
  return createBatcher({
    ...options,
    name,
    handle,
    isTransient: isStoreOutage,
  });
}

/** The database is unreachable: worth retrying for as long as it takes. */
export function isStoreOutage(error: unknown): boolean {
  return error instanceof StoreUnavailableError;
}

function countBy<T>(items: readonly T[], key: (item: T) => LogQueue): Map<LogQueue, number> {
  const counts = new Map<LogQueue, number>();
  for (const item of items) {
    const k = key(item);
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}
