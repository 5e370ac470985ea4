import type { Static } from 'typebox';
import type { RequestLogObject } from '../api/schemas.js';
import { wholeMs } from '../rules/whole-ms.js';
import type { RequestLogEntry } from '../store/records.js';
import type { RequestLogRecord } from './record.js';

/**
 * A request-log record in the field names of specification §2.5 plus `request_id`: the items of
 * GET /v1/logs and the `--log-requests` lines on stdout are the same object. Its type is the API
 * schema's (a type only: nothing of the API is loaded on the log thread), so the two cannot drift.
 */
export type RequestLogJson = Static<typeof RequestLogObject>;

export function requestLogJson(entry: RequestLogEntry): RequestLogJson {
  return {
    request_id: entry.id,
    timestamp: entry.timestamp,
    token_id: entry.tokenId,
    origin: entry.origin,
    ip: entry.ip,
    country: entry.country,
    pop: entry.pop,
    path: entry.path,
    status: entry.status,
    authorized: entry.authorized,
    latency_ms: entry.latencyMs,
    error_code: entry.errorCode,
    model: entry.model,
    input_tokens: entry.inputTokens,
    output_tokens: entry.outputTokens,
    cost_micros: entry.costMicros,
  };
}

/** What the store keeps of a record: everything but `forwarded`, which only feeds usage counting. */
export function toRequestLogEntry(record: RequestLogRecord): RequestLogEntry {
  return {
    id: record.requestId,
    timestamp: record.timestamp,
    accountId: record.accountId,
    tokenId: record.tokenId,
    provider: record.provider,
    origin: record.origin,
    ip: record.ip,
    country: record.country,
    pop: record.pop,
    path: record.path,
    status: record.status,
    authorized: record.authorized,
    // The column is an integer (spec §2.5); the proxy may measure fractions.
    latencyMs: wholeMs(record.latencyMs),
    errorCode: record.errorCode,
    model: record.model,
    inputTokens: record.inputTokens,
    outputTokens: record.outputTokens,
    costMicros: record.costMicros,
  };
}

/** The message of `--log-requests` lines. */
export const REQUEST_LOG_MSG = 'request';

/**
 * A `--log-requests` line: shaped like every other log line (src/observability/logger.ts: `level`,
 * `time`, `service`, then the fields, then `msg`) so one log pipeline reads both.
 */
export function requestLogLine(item: RequestLogJson, time: string): string {
  return `${JSON.stringify({ level: 'info', time, service: 'tokenproxy', ...item, msg: REQUEST_LOG_MSG })}\n`;
}
