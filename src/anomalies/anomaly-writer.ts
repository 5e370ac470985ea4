import { createBatcher, isStoreOutage, type BatchingOptions } from '../requestlog/batcher.js';
import { LOG_BUDGETS } from '../requestlog/log-budgets.js';
import { anomalyEntryBytes } from '../requestlog/record-size.js';
import type { AnomalyEntry } from '../store/records.js';
import type { AnomalyRepo } from '../store/store.js';
import type { OnUnauthorized, UnauthorizedAttempt } from './record.js';

export interface AnomalyWriterOptions extends BatchingOptions {
  readonly store: { readonly anomalies: Pick<AnomalyRepo, 'insertMany'> };
  /** Bytes queued (anomalyEntryBytes) beyond which the oldest entries are dropped. */
  readonly maxBytes?: number | undefined;
}

export interface AnomalyWriter {
  /** Queues the anomaly-log entry of an unauthorized request (kind `breach`). Never throws or waits. */
  readonly onUnauthorized: OnUnauthorized;
  /** Queues an entry of any kind (rate spikes and other detectors). */
  write(entry: AnomalyEntry): void;
  /** Resolves when every entry queued so far is stored. */
  flush(): Promise<void>;
  /** Like flush, without hurrying the batches. */
  settled(): Promise<void>;
  close(): Promise<void>;
  readonly size: number;
}

/** The anomaly log, written off the proxy's path in batches like the request log. */
export function createAnomalyWriter(options: AnomalyWriterOptions): AnomalyWriter {
  const { store, maxBytes, ...batching } = options;
  const batcher = createBatcher<AnomalyEntry>({
    ...batching,
    name: 'anomaly_log',
    handle: (batch) => store.anomalies.insertMany(batch),
    isTransient: isStoreOutage,
    maxBytes: maxBytes ?? LOG_BUDGETS.anomalyBytes,
    sizeOf: anomalyEntryBytes,
  });
  return {
    onUnauthorized: (attempt) => batcher.push(breachEntry(attempt)),
    write: (entry) => batcher.push(entry),
    flush: () => batcher.flush(),
    settled: () => batcher.settled(),
    close: () => batcher.close(),
    get size(): number {
      return batcher.size;
    },
  };
}

export function breachEntry(attempt: UnauthorizedAttempt): AnomalyEntry {
  return {
    id: attempt.requestId,
    accountId: attempt.accountId,
    tokenId: attempt.tokenId,
    timestamp: attempt.timestamp,
    origin: attempt.origin,
    ip: attempt.ip,
    country: attempt.country,
    path: attempt.path,
    reason: attempt.reason,
    kind: 'breach',
    details: null,
  };
}
