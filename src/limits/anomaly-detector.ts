import type { Logger } from 'pino';
import { errorName } from '../errors/summary.js';
import type { EventPublisher } from '../events/publisher.js';
import type { AnomalyEntry } from '../store/records.js';
import { AnomalyModel, type AnomalySettings, type Detection } from './anomaly-model.js';

const SWEEP_EVERY_MS = 5 * 60_000;

export interface AnomalyDetectorOptions {
  readonly settings: AnomalySettings;
  readonly anomalies: { write(entry: AnomalyEntry): void };
  readonly publisher: EventPublisher;
  readonly logger?: Logger | undefined;
}

/** The request that made a token's usage anomalous: its values fill the anomaly-log entry. */
export interface ObservedRequest {
  readonly requestId: string;
  readonly accountId: string;
  readonly tokenId: string;
  readonly origin: string | null;
  readonly ip: string;
  readonly country: string | null;
  readonly path: string;
}

export interface ObservedSource {
  observed(): ObservedRequest;
}

export interface AnomalyDetector {
  /**
   * Counts an authorized request; on an anomaly writes the anomaly log and publishes
   * `anomaly.detected` without waiting. `source` is asked for the request only then, so the usual
   * request allocates nothing here.
   */
  observe(tokenId: string, now: number, ip: string, country: string | null, source: ObservedSource): void;
  close(): void;
}

export function createAnomalyDetector(options: AnomalyDetectorOptions): AnomalyDetector {
  const { anomalies, publisher, logger } = options;
  const model = new AnomalyModel(options.settings);
  let lastNow = 0;
  const timer = setInterval(() => model.sweep(lastNow), SWEEP_EVERY_MS);
  timer.unref();

  function report(found: readonly Detection[], now: number, req: ObservedRequest): void {
    const timestamp = new Date(now).toISOString();
    for (const { kind, details } of found) {
      anomalies.write({
        // One request can be anomalous in two ways; the kind keeps the ids apart.
        id: `${req.requestId}.${kind}`,
        accountId: req.accountId,
        tokenId: req.tokenId,
        timestamp,
        origin: req.origin,
        ip: req.ip,
        country: req.country,
        path: req.path,
        reason: kind,
        kind,
        details,
      });
      publisher
        .publish({
          accountId: req.accountId,
          type: 'anomaly.detected',
          data: { token_id: req.tokenId, kind, details },
        })
        .catch((err: unknown) => logger?.error({ err: errorName(err) }, 'anomaly.detected not recorded'));
    }
  }

  return {
    observe(tokenId, now, ip, country, source) {
      lastNow = now;
      const found = model.observe(tokenId, now, ip, country);
      if (found !== null) report(found, now, source.observed());
    },
    close() {
      clearInterval(timer);
    },
  };
}
