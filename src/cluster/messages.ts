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

function typed(message: unknown, type: string): boolean {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;
}

export const isReady = (m: unknown): m is ReadyMessage => typed(m, 'tokenproxy:ready');
export const isMetricsRequest = (m: unknown): m is MetricsRequest => typed(m, 'tokenproxy:metrics');
export const isMetricsReply = (m: unknown): m is MetricsReply => typed(m, 'tokenproxy:metrics-reply');
