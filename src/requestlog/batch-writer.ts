import type { UsageRollupRepo } from '../store/dashboard-records.js';
import type { RequestLogRepo, TokenRepo, TokenUsage } from '../store/store.js';
import { createBatcher, createStoreBatcher, type Batcher, type BatchingOptions } from './batcher.js';
import { requestLogJson, toRequestLogEntry } from './json.js';
import type { RequestLogRecord, RequestLogSink } from './record.js';
import { rollupsOf } from './rollups.js';

export interface RequestLogWriterOptions extends BatchingOptions {
  readonly store: {
    readonly requestLogs: Pick<RequestLogRepo, 'insertMany'>;
    readonly tokens: Pick<TokenRepo, 'recordUsage'>;
    /** The dashboard's per-hour counts (GET /v1/usage); kept when given. */
    readonly usageRollups?: Pick<UsageRollupRepo, 'add'> | undefined;
  };
  /**
   * `--log-requests`: each record also goes out as one JSON line (spec §2.5 names plus
   * `request_id`), ending in a newline, ready for `process.stdout.write`.
   */
  readonly stdout?: ((line: string) => void) | undefined;
}

export interface RequestLogWriter extends RequestLogSink {
  /** Records waiting to be stored. */
  readonly size: number;
}

/**
 * The proxy's request-log sink: `write` only queues; a background batcher stores the records and,
 * in the same pass, counts forwarded requests toward `request_count`, `last_used_at` and usage.
 */
export function createRequestLogWriter(options: RequestLogWriterOptions): RequestLogWriter {
  const { store, stdout, ...batching } = options;

  const stored = createStoreBatcher<RequestLogRecord>(
    'request_log',
    async (batch) => {
      await store.requestLogs.insertMany(batch.map(toRequestLogEntry));
      // After the records: a retry re-inserts nothing (ids are skipped) but still owes the counts.
      const usage = usageOf(batch);
      if (usage.length > 0) await store.tokens.recordUsage(usage);
      await addRollups(batch);
    },
    batching,
  );

  /**
   * The dashboard's per-hour counts, last: they are display-only, so a failure here is logged and
   * not retried, since a retry of the whole batch would count plan usage twice.
   */
  async function addRollups(batch: readonly RequestLogRecord[]): Promise<void> {
    if (store.usageRollups === undefined) return;
    try {
      await store.usageRollups.add(rollupsOf(batch));
    } catch (err) {
      batching.logger.warn(
        { records: batch.length, err: err instanceof Error ? err.name : 'error' },
        'request_log: could not add the usage rollups of a batch',
      );
    }
  }

  // A queue of its own, so the lines keep flowing while the database is down and are never
  // printed twice by a retried batch.
  const printed = stdout === undefined ? undefined : createRequestLinePrinter(stdout, batching);

  return {
    write(record: RequestLogRecord): void {
      stored.push(record);
      printed?.push(record);
    },
    async flush(): Promise<void> {
      await Promise.all([stored.flush(), printed?.flush()]);
    },
    async close(): Promise<void> {
      await Promise.all([stored.close(), printed?.close()]);
    },
    get size(): number {
      return stored.size;
    },
  };
}

/**
 * `--log-requests`: prints each record as one JSON line (spec §2.5 names plus `request_id`) in
 * batches, off the request's path. Lines that cannot be written are counted in one warning.
 */
export function createRequestLinePrinter(
  stdout: (line: string) => void,
  batching: BatchingOptions,
): Batcher<RequestLogRecord> {
  const { logger } = batching;
  return createBatcher<RequestLogRecord>({
    ...batching,
    metrics: undefined,
    name: 'request_log_stdout',
    handle: (batch) => {
      let failed = 0;
      for (const record of batch) {
        try {
          stdout(`${JSON.stringify(requestLogJson(toRequestLogEntry(record)))}\n`);
        } catch {
          failed += 1;
        }
      }
      if (failed > 0) logger.warn({ lines: failed }, 'request_log_stdout: could not print lines');
      return Promise.resolve();
    },
  });
}

/** One entry per token and month: the batch's forwarded requests, with the latest timestamp. */
function usageOf(batch: readonly RequestLogRecord[]): TokenUsage[] {
  const byToken = new Map<
    string,
    { tokenId: string; accountId: string; count: number; lastUsedAt: string }
  >();
  for (const record of batch) {
    const { tokenId, accountId } = record;
    if (!record.forwarded || tokenId === null || accountId === null) continue;
    // The month of an ISO timestamp is its first 7 characters (`recordUsage` derives the period
    // itself); parsing a Date per record cost the log worker more than this whole loop.
    const key = `${tokenId} ${record.timestamp.slice(0, 7)}`;
    const entry = byToken.get(key);
    if (entry === undefined) {
      byToken.set(key, { tokenId, accountId, count: 1, lastUsedAt: record.timestamp });
    } else {
      entry.count += 1;
      if (record.timestamp > entry.lastUsedAt) entry.lastUsedAt = record.timestamp;
    }
  }
  return [...byToken.values()];
}
