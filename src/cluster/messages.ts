/** IPC between the `--workers` primary and its workers (node:cluster's channel). */

/** A worker's listeners are bound: the primary may print the banner and create the first account. */
export interface ReadyMessage {
  readonly type: 'tokenproxy:ready';
  /** The banner lines the worker's start-up printed (addresses, TLS fingerprint). */
  readonly banner: readonly string[];
}

/** A worker asks for the whole service's metrics (its GET /metrics). */
export interface MetricsRequest {
  readonly type: 'tokenproxy:metrics';
  readonly id: number;
}

export interface MetricsReply {
  readonly type: 'tokenproxy:metrics-reply';
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
}

/** The primary asks a worker for its own series (it answers with its registry's JSON). */
export interface SeriesRequest {
  readonly type: 'tokenproxy:series';
  readonly id: number;
}

export interface SeriesReply {
  readonly type: 'tokenproxy:series-reply';
  readonly id: number;
  readonly series: readonly unknown[];
}

function typed(message: unknown, type: string): boolean {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;
}

export const isReady = (m: unknown): m is ReadyMessage => typed(m, 'tokenproxy:ready');
export const isMetricsRequest = (m: unknown): m is MetricsRequest => typed(m, 'tokenproxy:metrics');
export const isMetricsReply = (m: unknown): m is MetricsReply => typed(m, 'tokenproxy:metrics-reply');
export const isSeriesRequest = (m: unknown): m is SeriesRequest => typed(m, 'tokenproxy:series');
export const isSeriesReply = (m: unknown): m is SeriesReply => typed(m, 'tokenproxy:series-reply');
