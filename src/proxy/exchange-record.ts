import { recordOrigin, recordPath, recordTextLimit } from '../requestlog/record.js';
import { wholeMs } from '../rules/whole-ms.js';
import type { TokenRecord } from '../store/records.js';
import type { Exchange } from './exchange.js';
import type { RecordedUsage } from './usage-meter.js';

/**
 * The one request-log record and the latency metrics of a finished exchange, written when its
 * response closes. Apart from the request flow (exchange.ts) because nothing here can change how the
 * request is answered: by now it has been, and a failure here is only logged.
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
