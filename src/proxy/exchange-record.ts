import type { ObservedRequest } from '../limits/anomaly-detector.js';
import { recordOrigin, recordPath, recordTextLimit } from '../requestlog/record.js';
import { wholeMs } from '../rules/whole-ms.js';
import type { TokenRecord } from '../store/records.js';
import type { Exchange } from './exchange.js';
import type { RecordedUsage } from './usage-meter.js';

/**
 * What the logs keep of an exchange: its one request-log record and latency metrics, written when its
 * response closes, and the request as the anomaly log sees it. Apart from the request flow
 * (exchange.ts) because nothing here changes how the request is answered.
 */
export function writeRecord(
  ex: Exchange,
  token: TokenRecord | undefined,
  provider: string | null,
  status: number,
  forwarded: boolean,
  authorized: boolean,
  country: string | null,
  usage: RecordedUsage,
  upstreamMs: number | null,
): void {
  const deps = ex.deps;
  const textLimit = recordTextLimit(forwarded);
  try {
    deps.requestLog.write({
      requestId: ex.requestId,
      timestamp: new Date(ex.wallStart).toISOString(),
      accountId: token?.accountId ?? null,
      tokenId: token?.id ?? null,
      provider,
      origin: recordOrigin(ex.origin, ex.originHeader, textLimit),
      ip: ex.ip,
      country,
      pop: deps.config.pop,
      path: recordPath(ex.path, textLimit),
      status,
      authorized,
      latencyMs: wholeMs(ex.addedMs),
      forwarded,
      errorCode: ex.errorCode,
      model: usage.model,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costMicros: usage.costMicros,
    });
    deps.metrics.observe(provider ?? 'unknown', status, ex.addedMs, upstreamMs);
  } catch (err) {
    ex.logError(err, 'request log or metrics failed');
  }
}

/** The request as the anomaly log records it, its path and origin cut to `maxBytes`. */
export function observedRequest(
  ex: Exchange,
  token: TokenRecord,
  country: string | null,
  maxBytes: number,
): ObservedRequest {
  return {
    requestId: ex.requestId,
    accountId: token.accountId,
    tokenId: token.id,
    origin: recordOrigin(ex.origin, ex.originHeader, maxBytes),
    ip: ex.ip,
    country,
    path: recordPath(ex.path, maxBytes),
  };
}
