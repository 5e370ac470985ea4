import type { UsageModelRollupRepo, UsageRollupRepo } from '../store/rollup-records.js';
import type { RequestLogRepo, TokenRepo, TokenUsage } from '../store/store.js';
import {
  createBatcher,
  createStoreBatcher,
  isStoreOutage,
  type Batcher,
  type BatchingOptions,
} from './batcher.js';
import { requestLogJson, requestLogLine, toRequestLogEntry } from './json.js';
import { requestQueue } from './log-protocol.js';
import type { RequestLogRecord, RequestLogSink } from './record.js';
import { LOG_BUDGETS } from './log-budgets.js';
import { requestRecordBytes } from './record-size.js';
import { modelRollupsOf, rollupsOf } from './rollups.js';

export interface RequestLogWriterOptions extends BatchingOptions {
  readonly store: {
    readonly requestLogs: Pick<RequestLogRepo, 'insertMany'>;
    /** The dashboard's per-hour counts (GET /v1/usage); kept when given. */
    readonly usageRollups?: Pick<UsageRollupRepo, 'add'> | undefined;
    /** Tokens and cost per hour, token and model (GET /v1/usage, budgets); kept when given. */
    readonly usageModelRollups?: Pick<UsageModelRollupRepo, 'add'> | undefined;
  };
  /** For log lines and metrics (default `request_log`). */
  readonly name?: string | undefined;
  /** Bytes queued (requestRecordBytes) beyond which the oldest records are dropped. */
  readonly maxBytes?: number | undefined;
  /**
   * `--log-requests`: each record also goes out as one JSON line (spec §2.5 names plus
   * `request_id`), ending in a newline, ready for `process.stdout.write`.
   */
  readonly stdout?: ((line: string) => void) | undefined;
}

export interface RequestLogWriter extends RequestLogSink {
  /** Records waiting to be stored. */
  readonly size: number;
  /** Resolves when every record written so far is stored or dropped, without hurrying the batches. */
  settled(): Promise<void>;
}

/**
 * The request-log sink: `write` only queues; a background batcher stores the records. Usage
 * (`request_count`, `last_used_at`, monthly usage) is not counted from these records: the proxy's
 * thread tallies it (usage-tally.ts) and createUsageWriter stores it, so usage never waits behind,
 * or is lost with, a queue of records.
 */
export function createRequestLogWriter(options: RequestLogWriterOptions): RequestLogWriter {
  const { store, stdout, name, maxBytes, ...batching } = options;

  const stored = createBatcher<RequestLogRecord>({
    ...batching,
    name: name ?? 'request_log',
    handle: async (batch) => {
      await store.requestLogs.insertMany(batch.map(toRequestLogEntry));
      await addRollups(batch);
    },
    isTransient: isStoreOutage,
    maxBytes,
    sizeOf: requestRecordBytes,
    // Forwarded and refused records of known tokens share this writer: each loss under its own.
    queueOf: requestQueue,
  });

  /**
   * The dashboard's per-hour counts, after the records: they are display-only, so a failure here is
   * logged and not retried (a retry of the whole batch would count its rollups twice).
   */
  async function addRollups(batch: readonly RequestLogRecord[]): Promise<void> {
    if (store.usageRollups === undefined) return;
    try {
      await store.usageRollups.add(rollupsOf(batch));
      await store.usageModelRollups?.add(modelRollupsOf(batch));
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
    settled: () => stored.settled(),
    async close(): Promise<void> {
      await Promise.all([stored.close(), printed?.close()]);
    },
    get size(): number {
      return stored.size;
    },
  };
}

export interface UsageWriter {
  /** Queues usage entries (usage-tally.ts) for `recordUsage`. */
  write(usage: readonly TokenUsage[]): void;
  flush(): Promise<void>;
  settled(): Promise<void>;
  close(): Promise<void>;
}

/** Stores tallied usage in batches; an unreachable database is waited out like for the logs. */
export function createUsageWriter(
  options: BatchingOptions & { readonly store: { readonly tokens: Pick<TokenRepo, 'recordUsage'> } },
): UsageWriter {
  const { store, ...batching } = options;
  const batcher = createStoreBatcher<TokenUsage>(
    'usage',
    (batch) => store.tokens.recordUsage(batch),
    batching,
  );
  return {
    write(usage) {
      for (const entry of usage) batcher.push(entry);
    },
    flush: () => batcher.flush(),
    settled: () => batcher.settled(),
    close: () => batcher.close(),
  };
}

/**
 * `--log-requests`: prints each record as one JSON line (spec §2.5 names plus `request_id` and
 * `error_code`, in the shape of every other log line) in batches, off the request's path. Lines that cannot be written are counted in one warning.
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
    maxBytes: LOG_BUDGETS.stdoutBytes,
    sizeOf: requestRecordBytes,
    handle: (batch) => {
      let failed = 0;
      for (const record of batch) {
        try {
          stdout(requestLogLine(requestLogJson(toRequestLogEntry(record)), new Date().toISOString()));
        } catch {
          failed += 1;
        }
      }
      if (failed > 0) logger.warn({ lines: failed }, 'request_log_stdout: could not print lines');
      return Promise.resolve();
    },
  });
}
