import { deserialize, serialize } from 'node:v8';
import type { AnomalyEntry } from '../store/records.js';
import type { TokenUsage } from '../store/store.js';
import type { DropReason } from './batcher.js';
import type { LogBudgets } from './log-budgets.js';
import type { RequestLogRecord } from './record.js';

/**
 * Messages between the proxy's thread and the log worker (src/requestlog/log-thread.ts). Records
 * cross by structured clone, a batch per message, so the proxy thread pays one post per batch.
 */

/** What the worker needs to open its own connection to the store. */
export interface LogThreadData {
  readonly database: string | undefined;
  readonly dataDir: string;
  readonly flushIntervalMs: number | undefined;
  readonly budgets: LogBudgets;
}

export type ToLogThread =
  | {
      readonly t: 'records';
      /** Answered by `done` with the same id once everything in the message is stored (or dropped). */
      readonly id: number;
      /**
       * Request records of a known token, packed by packRequest, REQUEST_WIDTH values each, in one
       * serialized buffer (encodePacked): the proxy's thread keeps it until they are stored. The
       * forwarded records first, then the refused ones: two queues on the proxy's thread
       * (`request_log`, `request_log_refused`), one table and one writer here.
       */
      readonly keyed: Uint8Array;
      /** Request records where no token matched, packed by packRequest (plain: not kept once posted). */
      readonly unmatched: readonly PackedValue[];
      readonly anomalies: readonly AnomalyEntry[];
      /** Forwarded requests tallied on the proxy's thread (usage-tally.ts), for `recordUsage`. */
      readonly usage: readonly TokenUsage[];
    }
  | { readonly t: 'flush'; readonly id: number }
  | { readonly t: 'close' };

/** Queue names as the metrics know them (log-budgets.ts explains the split of request records). */
export type LogQueue =
  'request_log' | 'request_log_refused' | 'request_log_unmatched' | 'anomaly_log' | 'usage';

export const LOG_QUEUES: readonly LogQueue[] = [
  'request_log',
  'request_log_refused',
  'request_log_unmatched',
  'anomaly_log',
  'usage',
];

export type FromLogThread =
  | { readonly t: 'done'; readonly id: number }
  | { readonly t: 'flushed'; readonly id: number }
  | { readonly t: 'closed' }
  | { readonly t: 'dropped'; readonly queue: LogQueue; readonly count: number; readonly reason: DropReason }
  | { readonly t: 'store_failed'; readonly queue: LogQueue }
  /** One pino line of the worker's logger, re-logged by the main thread's logger. */
  | { readonly t: 'log'; readonly line: string };

export type PackedValue = string | number | boolean | null;

/** Values per packed request record. */
export const REQUEST_WIDTH = 19;

/**
 * Appends a record's fields to `out` in a fixed order. A flat array of primitives clones several
 * times faster than objects (whose keys are serialized again for every record) and allocates nothing
 * per record on the proxy thread.
 */
export function packRequest(out: PackedValue[], r: RequestLogRecord): void {
  out.push(
    r.requestId,
    r.timestamp,
    r.accountId,
    r.tokenId,
    r.provider,
    r.origin,
    r.ip,
    r.country,
    r.pop,
    r.path,
    r.status,
    r.authorized,
    r.latencyMs,
    r.forwarded,
    r.errorCode,
    r.model,
    r.inputTokens,
    r.outputTokens,
    r.costMicros,
  );
}

/** The records packRequest put in `packed`, in order. */
export function unpackRequests(packed: readonly PackedValue[]): RequestLogRecord[] {
  const records: RequestLogRecord[] = [];
  for (let i = 0; i + REQUEST_WIDTH <= packed.length; i += REQUEST_WIDTH) {
    records.push({
      requestId: packed[i] as string,
      timestamp: packed[i + 1] as string,
      accountId: packed[i + 2] as string | null,
      tokenId: packed[i + 3] as string | null,
      provider: packed[i + 4] as string | null,
      origin: packed[i + 5] as string | null,
      ip: packed[i + 6] as string,
      country: packed[i + 7] as string | null,
      pop: packed[i + 8] as string,
      path: packed[i + 9] as string,
      status: packed[i + 10] as number,
      authorized: packed[i + 11] as boolean,
      latencyMs: packed[i + 12] as number,
      forwarded: packed[i + 13] as boolean,
      errorCode: packed[i + 14] as string | null,
      model: packed[i + 15] as string | null,
      inputTokens: packed[i + 16] as number | null,
      outputTokens: packed[i + 17] as number | null,
      costMicros: packed[i + 18] as number | null,
    });
  }
  return records;
}

/**
 * Packed values as one buffer, for what the proxy's thread must keep until the worker has stored it.
 * Kept as JavaScript values, each record's strings lived ~0.2 s (post + the worker's batch), long
 * enough to survive two scavenges: V8 promoted them, the old generation grew by ~370 bytes per
 * request and a 10-20 ms mark-compact followed every few seconds (issue 17). The buffer's bytes live
 * outside the JavaScript heap, and serializing costs what postMessage's own structured clone did.
 */
export function encodePacked(values: readonly PackedValue[]): Uint8Array {
  return serialize(values);
}

export function decodePacked(bytes: Uint8Array): PackedValue[] {
  return deserialize(bytes) as PackedValue[];
}

/** The queue a request record goes to (log-budgets.ts says why they are apart). */
export function requestQueue(record: RequestLogRecord): LogQueue {
  if (record.tokenId === null) return 'request_log_unmatched';
  return record.forwarded ? 'request_log' : 'request_log_refused';
}
