import type { AnomalyEntry } from '../store/records.js';
import type { TokenUsage } from '../store/store.js';
import type { DropReason } from './batcher.js';
import type { LogBudgets } from './log-budgets.js';
import {
  decodePacked,
  encodePacked,
  packRequest,
  REQUEST_WIDTH,
  type LogQueue,
  type PackedValue,
  type ToLogThread,
} from './log-protocol.js';
import type { RequestLogRecord } from './record.js';
import { anomalyEntryBytes, packedRecordBytes } from './record-size.js';
import { UsageTally } from './usage-tally.js';

export type RecordsMessage = Extract<ToLogThread, { t: 'records' }>;
export type OnDropped = (queue: LogQueue, count: number, reason: DropReason) => void;

/**
 * What the proxy's thread holds for the log worker, with no I/O of its own (log-worker.ts posts
 * and restarts): three queues, each bounded by its budget (log-budgets.ts), and the usage tally.
 *
 * Records of a known token, anomaly entries and usage stay here after they are posted, until the
 * worker answers that the message is stored: a worker that dies loses none of them, they are posted
 * again to the next one (storing is idempotent per id). Records where no token matched are let go
 * once posted (a worker that dies with them loses them, counted), but still count against their
 * budget until stored, so a flood of them can never fill the worker.
 */
export class Handover {
  readonly #budgets: LogBudgets;
  readonly #onDropped: OnDropped;
  readonly #keyed = new Lane('request_log');
  readonly #unmatched = new Lane('request_log_unmatched');
  #anomalies: AnomalyEntry[] = [];
  #anomalyBytes = 0;
  /** Anomaly entries and bytes posted and not yet stored. */
  #anomaliesPosted = 0;
  #anomalyBytesPosted = 0;
  readonly #tally = new UsageTally();
  readonly #posted = new Map<number, Posted>();
  #usagePosted = 0;
  #nextId = 1;

  constructor(budgets: LogBudgets, onDropped: OnDropped) {
    this.#budgets = budgets;
    this.#onDropped = onDropped;
  }

  request(record: RequestLogRecord): void {
    this.#tally.add(record);
    const lane = record.tokenId === null ? this.#unmatched : this.#keyed;
    packRequest(lane.values, record);
    // Measured on the packed values, as trim measures what it drops: the two always agree.
    lane.bytes += packedRecordBytes(lane.values, lane.values.length - REQUEST_WIDTH, REQUEST_WIDTH);
    const budget = lane === this.#keyed ? this.#budgets.keyedBytes : this.#budgets.unmatchedBytes;
    if (lane.bytes + lane.bytesPosted > budget || lane.count + lane.countPosted > this.#budgets.maxRecords)
      this.#onDropped(lane.queue, lane.trim(budget, this.#budgets.maxRecords), 'queue_full');
  }

  anomaly(entry: AnomalyEntry): void {
    this.#anomalies.push(entry);
    this.#anomalyBytes += anomalyEntryBytes(entry);
    const budget = this.#budgets.anomalyBytes;
    const max = this.#budgets.maxRecords;
    if (
      this.#anomalyBytes + this.#anomalyBytesPosted > budget ||
      this.#anomalies.length + this.#anomaliesPosted > max
    )
      this.#onDropped('anomaly_log', this.#trimAnomalies(budget, max), 'queue_full');
  }

  /** Items waiting to be posted (the caller posts early once there are many). */
  get waiting(): number {
    return this.#keyed.count + this.#unmatched.count + this.#anomalies.length;
  }

  get waitingBytes(): number {
    return this.#keyed.bytes + this.#unmatched.bytes + this.#anomalyBytes;
  }

  /** Records or entries of a queue not yet stored, here or in the worker. */
  depth(queue: LogQueue): number {
    switch (queue) {
      case 'request_log':
        return this.#keyed.count + this.#keyed.countPosted;
      case 'request_log_unmatched':
        return this.#unmatched.count + this.#unmatched.countPosted;
      case 'anomaly_log':
        return this.#anomalies.length + this.#anomaliesPosted;
      case 'usage':
        return this.#tally.size;
    }
  }

  /**
   * The next message to post, or undefined when there is nothing to send. Usage goes with at most
   * one message at a time (the tally keeps counting meanwhile, so a store that is down costs one
   * entry per token, not one per message), except when `flushing`: a flush answers for all of it.
   */
  take(flushing = false): RecordsMessage | undefined {
    const usage =
      this.#tally.size > 0 && (this.#usagePosted === 0 || flushing) ? this.#tally.take() : undefined;
    if (this.waiting === 0 && usage === undefined) return undefined;
    const id = this.#nextId++;
    const keyed = encodePacked(this.#keyed.values);
    const unmatched = this.#unmatched.values;
    const anomalies = this.#anomalies;
    this.#posted.set(id, {
      keyed,
      keyedCount: this.#keyed.count,
      keyedBytes: this.#keyed.bytes,
      unmatchedCount: this.#unmatched.count,
      unmatchedBytes: this.#unmatched.bytes,
      anomalies,
      anomalyBytes: this.#anomalyBytes,
      usage,
    });
    this.#keyed.post();
    this.#unmatched.post();
    this.#anomaliesPosted += anomalies.length;
    this.#anomalyBytesPosted += this.#anomalyBytes;
    this.#anomalies = [];
    this.#anomalyBytes = 0;
    if (usage !== undefined) this.#usagePosted += 1;
    return { t: 'records', id, keyed, unmatched, anomalies, usage: usage ?? [] };
  }

  /** The worker stored (or itself dropped and counted) everything in message `id`. */
  done(id: number): void {
    const posted = this.#posted.get(id);
    if (posted === undefined) return;
    this.#posted.delete(id);
    this.#forget(posted);
  }

  /**
   * The worker died. What was posted to it and not stored is queued again, in its order and ahead
   * of what came since, except records where no token matched (counted as lost). With `requeue`
   * false (a worker that keeps dying on what it is given) everything but usage is counted as lost.
   */
  workerLost(requeue: boolean): void {
    const keyed: PackedValue[] = [];
    let keyedBytes = 0;
    const anomalies: AnomalyEntry[] = [];
    let anomalyBytes = 0;
    let unmatchedLost = 0;
    let keyedLost = 0;
    let anomaliesLost = 0;
    for (const posted of this.#posted.values()) {
      this.#forget(posted);
      if (posted.usage !== undefined) this.#tally.merge(posted.usage);
      unmatchedLost += posted.unmatchedCount;
      if (!requeue) {
        keyedLost += posted.keyedCount;
        anomaliesLost += posted.anomalies.length;
        continue;
      }
      if (posted.keyedCount > 0) for (const value of decodePacked(posted.keyed)) keyed.push(value);
      keyedBytes += posted.keyedBytes;
      for (const entry of posted.anomalies) anomalies.push(entry);
      anomalyBytes += posted.anomalyBytes;
    }
    this.#onDropped('request_log_unmatched', unmatchedLost, 'worker_lost');
    this.#onDropped('request_log', keyedLost, 'worker_lost');
    this.#onDropped('anomaly_log', anomaliesLost, 'worker_lost');
    this.#posted.clear();
    this.#keyed.prepend(keyed, keyedBytes);
    this.#anomalies = anomalies.concat(this.#anomalies);
    this.#anomalyBytes += anomalyBytes;
  }

  /** Counts everything not yet stored as dropped and forgets it (shutdown without a worker). */
  dropAll(reason: DropReason): void {
    for (const queue of ['request_log', 'request_log_unmatched', 'anomaly_log'] as const)
      this.#onDropped(queue, this.depth(queue), reason);
    this.#posted.clear();
    this.#keyed.clear();
    this.#unmatched.clear();
    this.#anomalies = [];
    this.#anomalyBytes = 0;
    this.#anomaliesPosted = 0;
    this.#anomalyBytesPosted = 0;
    this.#usagePosted = 0;
  }

  /** Usage still to be stored (the tally and unconfirmed hand-overs); kept by dropAll. */
  get usagePending(): boolean {
    return this.#tally.size > 0 || this.#usagePosted > 0;
  }

  #forget(posted: Posted): void {
    this.#keyed.stored(posted.keyedCount, posted.keyedBytes);
    this.#unmatched.stored(posted.unmatchedCount, posted.unmatchedBytes);
    this.#anomaliesPosted -= posted.anomalies.length;
    this.#anomalyBytesPosted -= posted.anomalyBytes;
    if (posted.usage !== undefined) this.#usagePosted -= 1;
  }

  #trimAnomalies(budget: number, max: number): number {
    const { count, bytes } = trimTarget(
      this.#anomalies.length,
      this.#anomalyBytes,
      this.#anomaliesPosted,
      this.#anomalyBytesPosted,
      budget,
      max,
      (i) => anomalyEntryBytes(this.#anomalies[i] as AnomalyEntry),
    );
    this.#anomalies.splice(0, count);
    this.#anomalyBytes -= bytes;
    return count;
  }
}

interface Posted {
  /** Serialized (encodePacked): bytes outside the JavaScript heap while the worker stores them. */
  readonly keyed: Uint8Array;
  readonly keyedCount: number;
  readonly keyedBytes: number;
  readonly unmatchedCount: number;
  readonly unmatchedBytes: number;
  readonly anomalies: readonly AnomalyEntry[];
  readonly anomalyBytes: number;
  readonly usage: TokenUsage[] | undefined;
}

/** Packed request records waiting to be posted, and the totals posted and not yet stored. */
class Lane {
  readonly queue: LogQueue;
  values: PackedValue[] = [];
  bytes = 0;
  countPosted = 0;
  bytesPosted = 0;

  constructor(queue: LogQueue) {
    this.queue = queue;
  }

  get count(): number {
    return this.values.length / REQUEST_WIDTH;
  }

  post(): void {
    this.countPosted += this.count;
    this.bytesPosted += this.bytes;
    this.values = [];
    this.bytes = 0;
  }

  stored(count: number, bytes: number): void {
    this.countPosted -= count;
    this.bytesPosted -= bytes;
  }

  prepend(values: PackedValue[], bytes: number): void {
    if (values.length === 0) return;
    this.values = values.concat(this.values);
    this.bytes += bytes;
  }

  clear(): void {
    this.values = [];
    this.bytes = 0;
    this.countPosted = 0;
    this.bytesPosted = 0;
  }

  /** Drops the oldest waiting records (see trimTarget); returns how many. */
  trim(budget: number, max: number): number {
    const { count, bytes } = trimTarget(
      this.count,
      this.bytes,
      this.countPosted,
      this.bytesPosted,
      budget,
      max,
      (i) => packedRecordBytes(this.values, i * REQUEST_WIDTH, REQUEST_WIDTH),
    );
    this.values.splice(0, count * REQUEST_WIDTH);
    this.bytes -= bytes;
    return count;
  }
}

/**
 * How many of the oldest waiting items to drop, and their bytes, for a queue over its budget: down
 * to nine tenths of it, so a queue kept full by a flood pays for a trim once per tenth of its
 * budget, not on every write. Items already posted cannot be taken back; when they alone exceed the
 * budget, everything waiting goes.
 */
export function trimTarget(
  count: number,
  bytes: number,
  countPosted: number,
  bytesPosted: number,
  budget: number,
  max: number,
  sizeAt: (index: number) => number,
): { count: number; bytes: number } {
  const byteTarget = budget * 0.9;
  const countTarget = Math.floor(max * 0.9);
  let dropped = 0;
  let droppedBytes = 0;
  while (
    dropped < count &&
    (bytes - droppedBytes + bytesPosted > byteTarget || count - dropped + countPosted > countTarget)
  ) {
    droppedBytes += sizeAt(dropped);
    dropped += 1;
  }
  return { count: dropped, bytes: droppedBytes };
}
