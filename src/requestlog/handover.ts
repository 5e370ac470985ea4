import type { AnomalyEntry } from '../store/records.js';
import type { TokenUsage } from '../store/store.js';
import type { DropReason } from './batcher.js';
import { Lane, trimTarget } from './lane.js';
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
import { anomalyEntryBytes } from './record-size.js';
import { TokenShares, type PostedShares } from './token-shares.js';
import { UsageTally } from './usage-tally.js';

export type RecordsMessage = Extract<ToLogThread, { t: 'records' }>;
export type OnDropped = (queue: LogQueue, count: number, reason: DropReason) => void;

/**
 * What the proxy's thread holds for the log worker, with no I/O of its own (log-worker.ts posts
 * and restarts): four queues, each bounded by its budget (log-budgets.ts), and the usage tally.
 *
 * Records of a known token (forwarded and refused), anomaly entries and usage stay here after they
 * are posted, until the worker answers that the message is stored: a worker that dies loses none of
 * them, they are posted again to the next one (storing is idempotent per id). Records where no
 * token matched are let go once posted (a worker that dies with them loses them, counted), but still
 * count against their budget until stored, so a flood of them can never fill the worker.
 *
 * Refused records of a known token and anomaly entries are what anyone holding a public token can
 * make at line rate: besides its own budget, each of those queues gives one token at most its share
 * (token-shares.ts), so a flood with one token neither evicts other tokens' items nor, being
 * apart, any forwarded record.
 */
export class Handover {
  readonly #budgets: LogBudgets;
  readonly #onDropped: OnDropped;
  readonly #keyed: Lane;
  readonly #refusedShares = new TokenShares();
  readonly #refused: Lane;
  readonly #unmatched: Lane;
  #anomalies: AnomalyEntry[] = [];
  #anomalyBytes = 0;
  /** Anomaly entries and bytes posted and not yet stored. */
  #anomaliesPosted = 0;
  #anomalyBytesPosted = 0;
  readonly #anomalyShares = new TokenShares();
  readonly #tally = new UsageTally();
  readonly #posted = new Map<number, Posted>();
  #usagePosted = 0;
  #nextId = 1;

  constructor(budgets: LogBudgets, onDropped: OnDropped) {
    this.#budgets = budgets;
    this.#onDropped = onDropped;
    this.#keyed = new Lane('request_log', budgets.keyedBytes);
    this.#refused = new Lane('request_log_refused', budgets.refusedBytes, this.#refusedShares);
    this.#unmatched = new Lane('request_log_unmatched', budgets.unmatchedBytes);
  }

  request(record: RequestLogRecord): void {
    this.#tally.add(record);
    const tokenId = record.tokenId;
    const lane = tokenId === null ? this.#unmatched : record.forwarded ? this.#keyed : this.#refused;
    const max = this.#budgets.maxRecords;
    packRequest(lane.values, record);
    // Measured on the packed values, as trim measures what it drops: the two always agree.
    const bytes = lane.lastBytes();
    if (lane.shares !== null && tokenId !== null) {
      if (!lane.shares.admits(tokenId, bytes, lane.budget, max)) {
        lane.unpackLast();
        return this.#onDropped(lane.queue, 1, 'token_share');
      }
      lane.shares.add(tokenId, bytes);
    }
    lane.bytes += bytes;
    if (lane.bytes + lane.bytesPosted > lane.budget || lane.count + lane.countPosted > max)
      this.#onDropped(lane.queue, lane.trim(max), 'queue_full');
  }

  anomaly(entry: AnomalyEntry): void {
    const bytes = anomalyEntryBytes(entry);
    const budget = this.#budgets.anomalyBytes;
    const max = this.#budgets.maxRecords;
    if (sharesQueue(entry)) {
      if (!this.#anomalyShares.admits(entry.tokenId, bytes, budget, max))
        return this.#onDropped('anomaly_log', 1, 'token_share');
      this.#anomalyShares.add(entry.tokenId, bytes);
    }
    this.#anomalies.push(entry);
    this.#anomalyBytes += bytes;
    if (
      this.#anomalyBytes + this.#anomalyBytesPosted > budget ||
      this.#anomalies.length + this.#anomaliesPosted > max
    )
      this.#onDropped('anomaly_log', this.#trimAnomalies(budget, max), 'queue_full');
  }

  /** Items waiting to be posted (the caller posts early once there are many). */
  get waiting(): number {
    return this.#keyed.count + this.#refused.count + this.#unmatched.count + this.#anomalies.length;
  }

  get waitingBytes(): number {
    return this.#keyed.bytes + this.#refused.bytes + this.#unmatched.bytes + this.#anomalyBytes;
  }

  /** Records or entries of a queue not yet stored, here or in the worker. */
  depth(queue: LogQueue): number {
    switch (queue) {
      case 'request_log':
        return this.#keyed.depth;
      case 'request_log_refused':
        return this.#refused.depth;
      case 'request_log_unmatched':
        return this.#unmatched.depth;
      case 'anomaly_log':
        return this.#anomalies.length + this.#anomaliesPosted;
      case 'usage':
        return this.#tally.size;
    }
  }

  /** What one token holds, waiting or posted, in the refused lane and the anomaly queue. */
  held(tokenId: string): { refused: number; refusedBytes: number; anomalies: number; anomalyBytes: number } {
    const refused = this.#refusedShares.held(tokenId);
    const anomalies = this.#anomalyShares.held(tokenId);
    return {
      refused: refused.count,
      refusedBytes: refused.bytes,
      anomalies: anomalies.count,
      anomalyBytes: anomalies.bytes,
    };
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
    // Refused records travel in the same payload, after the forwarded ones: the counts kept here
    // say where one kind ends, should they have to be queued again (workerLost).
    const forwarded = this.#keyed.values;
    const refused = this.#refused.values;
    const keyed = encodePacked(
      refused.length === 0 ? forwarded : forwarded.length === 0 ? refused : forwarded.concat(refused),
    );
    const unmatched = this.#unmatched.values;
    const anomalies = this.#anomalies;
    this.#posted.set(id, {
      keyed,
      keyedCount: this.#keyed.count,
      keyedBytes: this.#keyed.bytes,
      refusedCount: this.#refused.count,
      refusedBytes: this.#refused.bytes,
      refusedShares: this.#refusedShares.post(),
      unmatchedCount: this.#unmatched.count,
      unmatchedBytes: this.#unmatched.bytes,
      anomalies,
      anomalyBytes: this.#anomalyBytes,
      anomalyShares: this.#anomalyShares.post(),
      usage,
    });
    this.#keyed.post();
    this.#refused.post();
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
   * of what came since (each record in its own lane), except records where no token matched
   * (counted as lost). With `requeue` false (a worker that keeps dying on what it is given)
   * everything but usage is counted as lost.
   */
  workerLost(requeue: boolean): void {
    const keyed: PackedValue[] = [];
    let keyedBytes = 0;
    const refused: PackedValue[] = [];
    let refusedBytes = 0;
    const anomalies: AnomalyEntry[] = [];
    let anomalyBytes = 0;
    let unmatchedLost = 0;
    let keyedLost = 0;
    let refusedLost = 0;
    let anomaliesLost = 0;
    for (const posted of this.#posted.values()) {
      this.#forget(posted);
      if (posted.usage !== undefined) this.#tally.merge(posted.usage);
      unmatchedLost += posted.unmatchedCount;
      if (!requeue) {
        keyedLost += posted.keyedCount;
        refusedLost += posted.refusedCount;
        anomaliesLost += posted.anomalies.length;
        continue;
      }
      if (posted.keyedCount + posted.refusedCount > 0) {
        const values = decodePacked(posted.keyed);
        const split = posted.keyedCount * REQUEST_WIDTH;
        for (let i = 0; i < values.length; i += 1) (i < split ? keyed : refused).push(values[i] ?? null);
      }
      keyedBytes += posted.keyedBytes;
      refusedBytes += posted.refusedBytes;
      this.#refusedShares.requeue(posted.refusedShares);
      for (const entry of posted.anomalies) anomalies.push(entry);
      anomalyBytes += posted.anomalyBytes;
      this.#anomalyShares.requeue(posted.anomalyShares);
    }
    this.#onDropped('request_log_unmatched', unmatchedLost, 'worker_lost');
    this.#onDropped('request_log', keyedLost, 'worker_lost');
    this.#onDropped('request_log_refused', refusedLost, 'worker_lost');
    this.#onDropped('anomaly_log', anomaliesLost, 'worker_lost');
    this.#posted.clear();
    this.#keyed.prepend(keyed, keyedBytes);
    this.#refused.prepend(refused, refusedBytes);
    this.#anomalies = anomalies.concat(this.#anomalies);
    this.#anomalyBytes += anomalyBytes;
  }

  /** Counts everything not yet stored as dropped and forgets it (shutdown without a worker). */
  dropAll(reason: DropReason): void {
    for (const queue of [
      'request_log',
      'request_log_refused',
      'request_log_unmatched',
      'anomaly_log',
    ] as const)
      this.#onDropped(queue, this.depth(queue), reason);
    this.#posted.clear();
    this.#keyed.clear();
    this.#refused.clear();
    this.#refusedShares.clear();
    this.#unmatched.clear();
    this.#anomalies = [];
    this.#anomalyBytes = 0;
    this.#anomaliesPosted = 0;
    this.#anomalyBytesPosted = 0;
    this.#anomalyShares.clear();
    this.#usagePosted = 0;
  }

  /** Usage still to be stored (the tally and unconfirmed hand-overs); kept by dropAll. */
  get usagePending(): boolean {
    return this.#tally.size > 0 || this.#usagePosted > 0;
  }

  #forget(posted: Posted): void {
    this.#keyed.stored(posted.keyedCount, posted.keyedBytes);
    this.#refused.stored(posted.refusedCount, posted.refusedBytes);
    this.#refusedShares.forget(posted.refusedShares);
    this.#unmatched.stored(posted.unmatchedCount, posted.unmatchedBytes);
    this.#anomaliesPosted -= posted.anomalies.length;
    this.#anomalyBytesPosted -= posted.anomalyBytes;
    this.#anomalyShares.forget(posted.anomalyShares);
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
      (i) => {
        const entry = this.#anomalies[i] as AnomalyEntry;
        const size = anomalyEntryBytes(entry);
        if (sharesQueue(entry)) this.#anomalyShares.trimmed(entry.tokenId, size);
        return size;
      },
    );
    this.#anomalies.splice(0, count);
    this.#anomalyBytes -= bytes;
    return count;
  }
}

/**
 * Breach entries (one per refusal) are what a flood makes, so only they are held to a token's share
 * of the anomaly queue. A detector's finding (`rate_spike`, `many_ips`, `new_country`) comes at most
 * once per token per cooldown, and is the very entry such a flood must not crowd out.
 */
function sharesQueue(entry: AnomalyEntry): boolean {
  return entry.kind === 'breach';
}

interface Posted {
  /**
   * Serialized (encodePacked): bytes outside the JavaScript heap while the worker stores them.
   * The keyedCount forwarded records first, then the refusedCount refused ones.
   */
  readonly keyed: Uint8Array;
  readonly keyedCount: number;
  readonly keyedBytes: number;
  readonly refusedCount: number;
  readonly refusedBytes: number;
  /** What each token's refused records in the message hold of its share. */
  readonly refusedShares: PostedShares | undefined;
  readonly unmatchedCount: number;
  readonly unmatchedBytes: number;
  readonly anomalies: readonly AnomalyEntry[];
  readonly anomalyBytes: number;
  readonly anomalyShares: PostedShares | undefined;
  readonly usage: TokenUsage[] | undefined;
}
