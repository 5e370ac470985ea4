import type { Logger } from 'pino';
import { errorSummary } from '../errors/summary.js';
import type { PurgeReport } from './purge.js';

export interface RetentionSchedulerOptions {
  /** One retention pass; undefined when another process ran it. */
  readonly pass: () => Promise<PurgeReport | undefined>;
  readonly logger: Logger;
  /** Time between passes. */
  readonly intervalMs?: number | undefined;
  /** Time from start to the first pass (start-up has enough to do). */
  readonly firstDelayMs?: number | undefined;
}

export interface RetentionScheduler {
  /** One pass now (or the running one); undefined when another process ran it. */
  runNow(): Promise<PurgeReport | undefined>;
  /** Stops the timers and waits for a pass under way (stop it first: it runs to its end otherwise). */
  close(): Promise<void>;
}

const HOUR_MS = 3_600_000;

/**
 * Hourly retention passes, one at a time; what a pass deleted is logged, a failing pass once per
 * streak (and tried again at the next hour).
 */
export function startRetentionScheduler(options: RetentionSchedulerOptions): RetentionScheduler {
  const { logger } = options;
  let running: Promise<PurgeReport | undefined> | undefined;
  let closed = false;
  let failures = 0;
  let warnedVacuum = false;

  const pass = async (): Promise<PurgeReport | undefined> => {
    const report = await options.pass();
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
    if (closed) return Promise.reject(new Error('retention stopped'));
    running ??= pass().finally(() => (running = undefined));
    return running;
  };

  const tick = (): void => {
    if (closed || running !== undefined) return;
    runNow().then(
      () => (failures = 0),
      (err: unknown) => {
        // The name and code only: a lower layer's message may quote a connection string.
        if (failures++ === 0) logger.warn({ err: errorSummary(err) }, 'retention pass failed');
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
