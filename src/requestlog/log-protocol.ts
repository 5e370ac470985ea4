import type { AnomalyEntry } from '../store/records.js';
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
}

export type ToLogThread =
  | {
      readonly t: 'records';
      readonly requests: readonly RequestLogRecord[];
      readonly anomalies: readonly AnomalyEntry[];
    }
  | { readonly t: 'flush'; readonly id: number }
  | { readonly t: 'close' };

/** Queue names as the metrics know them. */
export type LogQueue = 'request_log' | 'anomaly_log';

export type FromLogThread =
  | { readonly t: 'flushed'; readonly id: number }
  | { readonly t: 'closed' }
  /** Items waiting in the worker's queues, sent after every batch received and every second. */
  | { readonly t: 'depth'; readonly request_log: number; readonly anomaly_log: number }
  | { readonly t: 'dropped'; readonly queue: LogQueue; readonly count: number }
  | { readonly t: 'store_failed'; readonly queue: LogQueue }
  /** One pino line of the worker's logger, re-logged by the main thread's logger. */
  | { readonly t: 'log'; readonly line: string };
