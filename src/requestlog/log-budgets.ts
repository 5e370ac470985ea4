import type { IdleMemoryRule } from '../runtime/idle-memory.js';

/**
 * How much each log queue may hold, in bytes as record-size.ts estimates them and in records.
 * Every queue has its own budget, so no kind of record can crowd out another:
 * - `keyed`: request records of a known token that were forwarded, the evidence of its use;
 * - `refused`: request records of a known token that were refused (a disallowed origin or IP, the
 *   `ip_backoff` 429s): anyone holding any public token can send these at line rate, so they must
 *   never evict a forwarded record; one token may hold at most 1/8 of it (token-shares.ts);
 * - `unmatched`: records where no token matched (no token, malformed or unknown token): anyone can
 *   send these at line rate with 16 KiB paths, so they get the smallest budget and go first;
 * - `anomaly`: anomaly-log entries (breaches, detector findings); one token's breaches 1/8 of it at
 *   most (a detector's finding, once per cooldown, is never held back by them).
 * A budget covers a record from the moment the proxy hands it over until it is stored, wherever it
 * is (waiting on the proxy's thread, in a message, in the log worker's queue), so the worker never
 * holds more than their sum. Usage counts have no budget: they are one entry per token.
 */
export interface LogBudgets {
  readonly keyedBytes: number;
  readonly refusedBytes: number;
  readonly unmatchedBytes: number;
  readonly anomalyBytes: number;
  /** Records (or entries) per queue, whatever their size. */
  readonly maxRecords: number;
  /** `--log-requests` lines waiting to be printed on the proxy's thread. */
  readonly stdoutBytes: number;
}

const MIB = 1024 * 1024;

export const LOG_BUDGETS: LogBudgets = {
  keyedBytes: 16 * MIB,
  refusedBytes: 4 * MIB,
  unmatchedBytes: 4 * MIB,
  anomalyBytes: 4 * MIB,
  maxRecords: 100_000,
  stdoutBytes: 8 * MIB,
};

/**
 * The log worker's heap: its queues (at most the four budgets: 28 MiB estimated, 56 MiB should
 * every string be two-byte), one batch being stored and one message being read. Four times the
 * estimated budgets leaves room for all of it; running out would cost the records that are not kept
 * until stored. The young generation is what V8 grows to tens of MB by default.
 *
 * Under `serve` the young-generation limit does not hold: V8 lets the process's
 * `--max-semi-space-size` (set for the proxy's thread, src/runtime/v8-tuning.ts) override a worker's
 * `resourceLimits`, so the worker's semi-spaces are 8 MB like the main thread's. Clearing the flag
 * once the proxy's thread is up would make this limit hold; measured, it gave back a few MB for three
 * to six times the worker's scavenges on the proxy's CPU, so it is not done (docs/performance.md,
 * round eighteen). `serve` sets no old-generation flag, so that limit holds.
 */
export const WORKER_HEAP_LIMITS = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 112 } as const;

/**
 * When the log worker gives its memory back: 5 s without a record after at least 10,000 of them. The
 * proxy's thread waits a quiet minute (IDLE_MEMORY_RULE) because its collection drops the compiled
 * code its next requests need; this thread's only slows the storing of the next records, on its own
 * thread, at its lower priority. What it gives back is mostly a backlog's: the bench's closed-loop
 * load leaves 20,000-30,000 records waiting here and this heap at 43-55 MB committed, 13 MB once
 * reduced (docs/performance.md, round nineteen).
 */
export const LOG_WORKER_IDLE_RULE: IdleMemoryRule = Object.freeze({ quietMs: 5_000, minWork: 10_000 });
