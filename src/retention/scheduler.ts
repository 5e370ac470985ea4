import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RetentionRepo } from '../store/retention-records.js';
import { runEverywhere, type ExclusiveRunner } from './exclusive-runner.js';
import { purgeOnce, type PurgeReport, type RetentionPolicy } from './purge.js';

export const RETENTION_JOB = 'retention';

export interface RetentionSchedulerOptions {
  readonly repo: RetentionRepo;
  readonly policy: RetentionPolicy;
  readonly logger: Logger;
  readonly now?: (() => Date) | undefined;
  readonly runner?: ExclusiveRunner | undefined;
  /** Time between passes. */
  readonly intervalMs?: number | undefined;
  /** Time from start to the first pass (start-up has enough to do). */
  readonly firstDelayMs?: number | undefined;
  readonly batchSize?: number | undefined;
  readonly pauseMs?: number | undefined;
  readonly vacuumPages?: number | undefined;
}

export interface RetentionScheduler {
  /** One pass now (or the running one); undefined when another process ran it. */
  runNow(): Promise<PurgeReport | undefined>;
  close(): Promise<void>;
}

const HOUR_MS = 3_600_000;
export const DEFAULT_BATCH_SIZE = 2000;
const DEFAULT_PAUSE_MS = 20;
const DEFAULT_VACUUM_PAGES = 2000;

/** Hourly retention passes; a pass that fails is logged (once per streak) and tried at the next. */
export function startRetentionScheduler(options: RetentionSchedulerOptions): RetentionScheduler {
  const { logger } = options;
  const now = options.now ?? (() => new Date());
  const runner = options.runner ?? runEverywhere;
  const pauseMs = options.pauseMs ?? DEFAULT_PAUSE_MS;
  let running: Promise<PurgeReport | undefined> | undefined;
  let closed = false;
  let failures = 0;
  let warnedVacuum = false;

  const pass = async (): Promise<PurgeReport | undefined> => {
    const report = await runner.run(RETENTION_JOB, () =>
      purgeOnce({
        repo: options.repo,
        policy: options.policy,
        now: now(),
        batchSize: options.batchSize ?? DEFAULT_BATCH_SIZE,
        pause: () => sleep(pauseMs),
        vacuumPages: options.vacuumPages ?? DEFAULT_VACUUM_PAGES,
        stopped: () => closed,
      }),
    );
    if (report === undefined) return undefined;
    const deleted = report.requestLogs + report.anomalies + report.events + report.rollups;
    if (deleted > 0) {
      logger.info(
        {
          request_logs: report.requestLogs,
          anomalies: report.anomalies,
          events: report.events,
          rollups: report.rollups,
          ...(report.space.kind === 'reclaimed' ? { pages_reclaimed: report.space.pages } : {}),
        },
        'retention: old history deleted',
      );
    }
    if (report.space.kind === 'needs_vacuum' && !warnedVacuum) {
      warnedVacuum = true;
      logger.info(
        { free_pages: report.space.freePages },
        'retention: this SQLite file predates incremental auto-vacuum, so freed space is reused but not returned to the disk; see "Retention" in docs/operations.md for the one-time VACUUM',
      );
    }
    return report;
  };

  const runNow = (): Promise<PurgeReport | undefined> => {
    running ??= pass().finally(() => (running = undefined));
    return running;
  };

  const tick = (): void => {
    if (closed || running !== undefined) return;
    runNow().then(
      () => (failures = 0),
      (err: unknown) => {
        if (failures++ === 0)
          logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'retention pass failed');
      },
    );
  };
  const first = setTimeout(tick, options.firstDelayMs ?? 60_000);
  const timer = setInterval(tick, options.intervalMs ?? HOUR_MS);
  first.unref();
  timer.unref();

  return {
    runNow,
    async close() {
      closed = true;
      clearTimeout(first);
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
