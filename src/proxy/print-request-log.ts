import type { RequestLogRecord, RequestLogSink } from '../requestlog/record.js';

/**
 * `--log-requests`: every request-log record as one JSON line, with the field names of the
 * specification (§2.5). Metadata only: a record holds no token, key, header value or body.
 */
export function printingRequestLog(enabled: boolean, writeLine: (line: string) => void): RequestLogSink {
  return {
    write(record) {
      if (enabled) writeLine(JSON.stringify(recordJson(record)));
    },
    flush: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

export function recordJson(record: RequestLogRecord): Record<string, unknown> {
  return {
    type: 'request',
    request_id: record.requestId,
    timestamp: record.timestamp,
    account_id: record.accountId,
    token_id: record.tokenId,
    provider: record.provider,
    origin: record.origin,
    ip: record.ip,
    country: record.country,
    pop: record.pop,
    path: record.path,
    status: record.status,
    authorized: record.authorized,
    latency_ms: record.latencyMs,
    forwarded: record.forwarded,
  };
}
