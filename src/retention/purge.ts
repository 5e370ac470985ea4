import type { Retention } from '../rules/retention-period.js';
import type { RetentionRepo, SpaceReclaim } from '../store/retention-records.js';

export interface RetentionPolicy {
  /** Request-log records, anomalies and finished events. */
  readonly logs: Retention;
  /** Per-hour usage rollups. */
  readonly rollups: Retention;
}

export interface PurgeOptions {
  readonly repo: RetentionRepo;
  readonly policy: RetentionPolicy;
  readonly now: Date;
  /** Rows per delete statement: each is one short write, so other writers wait at most one batch. */
  readonly batchSize: number;
  /** Awaited between batches, so the database (and this thread) serve others in between. */
  readonly pause: () => Promise<void>;
  /** Free pages returned to the file system per step (SQLite). */
  readonly vacuumPages: number;
  /** Checked between batches: a closing server stops the purge at the next batch. */
  readonly stopped?: () => boolean;
}

export interface PurgeReport {
  readonly requestLogs: number;
  readonly anomalies: number;
  readonly events: number;
  readonly rollups: number;
  readonly space: SpaceReclaim;
}

/** The first instant of `now`'s month (UTC), where month budgets start. */
function monthStart(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
}

/**
 * Request-log records no token matched (no token, a malformed or unknown one) belong to no account:
 * no API key can read them, and anyone can make them at line rate. They are kept this long at most,
 * whatever `log_retention` says (`forever` included), so such a flood costs a day of disk, not a
 * month: long enough to look into a probe from the database.
 */
export const UNMATCHED_RETENTION_MS = 24 * 60 * 60 * 1000;

/** The instant before which rows go, or null for `forever`. */
export function cutoff(retention: Retention, now: Date): string | null {
  return retention.ms === null ? null : new Date(now.getTime() - retention.ms).toISOString();
}

/**
 * One pass of retention: deletes everything older than the policy allows, batch by batch, then
 * returns freed SQLite pages in steps. Safe to interrupt between batches (each commits on its own)
 * and to run again: the next pass continues where this one stopped.
 */
export async function purgeOnce(options: PurgeOptions): Promise<PurgeReport> {
  const { repo, batchSize, pause } = options;
  const stopped = options.stopped ?? (() => false);
  const logsBefore = cutoff(options.policy.logs, options.now);
  const unmatchedCap = new Date(options.now.getTime() - UNMATCHED_RETENTION_MS).toISOString();
  const unmatchedBefore = logsBefore !== null && logsBefore > unmatchedCap ? logsBefore : unmatchedCap;
  const rollupsBefore = cutoff(options.policy.rollups, options.now);
  const totals = { requestLogs: 0, anomalies: 0, events: 0, rollups: 0 };

  /** Runs `step` until it deletes less than a full batch; returns the rows deleted. */
  const drain = async (step: () => Promise<number>): Promise<number> => {
    let total = 0;
    while (!stopped()) {
      const deleted = await step();
      total += deleted;
      if (deleted < batchSize) break;
      await pause();
    }
    return total;
  };

  for (const owner of await repo.historyOwners()) {
    if (owner === null) {
      totals.requestLogs += await drain(() => repo.deleteRequestLogs(null, unmatchedBefore, batchSize));
    } else if (logsBefore !== null) {
      totals.requestLogs += await drain(() => repo.deleteRequestLogs(owner, logsBefore, batchSize));
      totals.anomalies += await drain(() => repo.deleteAnomalies(owner, logsBefore, batchSize));
      totals.events += await drain(() => repo.deleteFinishedEvents(owner, logsBefore, batchSize));
    }
    if (rollupsBefore !== null && owner !== null) {
      totals.rollups += await drain(() => repo.deleteRollups(owner, rollupsBefore, batchSize));
      // Budgets start their counters from the per-model rollups of the period: the current month's
      // stay whatever the retention (a `total` budget's, for ever: deleteModelRollups keeps them).
      const modelBefore = rollupsBefore < monthStart(options.now) ? rollupsBefore : monthStart(options.now);
      totals.rollups += await drain(() => repo.deleteModelRollups(owner, modelBefore, batchSize));
    }
  }

  let space = await repo.reclaimSpace(options.vacuumPages);
  let pages = space.kind === 'reclaimed' ? space.pages : 0;
  while (space.kind === 'reclaimed' && space.freePagesLeft > 0 && space.pages > 0 && !stopped()) {
    await pause();
    space = await repo.reclaimSpace(options.vacuumPages);
    if (space.kind === 'reclaimed') pages += space.pages;
  }
  if (space.kind === 'reclaimed') space = { ...space, pages };
  else if (pages > 0) space = { kind: 'reclaimed', pages, freePagesLeft: 0 };
  return { ...totals, space };
}
