import type { Store } from './store.js';

/**
 * Notices a store upgraded under a running process: another member of a cluster, or a newer build
 * on the same data dir, applied a migration this version does not know. Old and new processes on one
 * store are not supported (docs/operations.md, "Upgrades"): the old one may write rows without the
 * new columns' meaning. It says so once in the log, and /readyz answers 503 `store_too_new`, so a
 * load balancer takes it out; it keeps serving what it can meanwhile.
 */
export interface SchemaWatch {
  /** Reads the store's migrations now; the unknown one, if any. */
  readonly check: () => Promise<string | undefined>;
  readonly close: () => void;
}

export interface SchemaWatchLogger {
  error(details: object, message: string): void;
}

/** How often the store's migrations are read when /readyz does not ask. */
export const SCHEMA_WATCH_INTERVAL_MS = 60_000;

export function watchSchema(
  store: Pick<Store, 'newerMigration'>,
  logger: SchemaWatchLogger,
  intervalMs = SCHEMA_WATCH_INTERVAL_MS,
): SchemaWatch {
  let told: string | undefined;
  const check = async (): Promise<string | undefined> => {
    const newer = await store.newerMigration();
    if (newer !== undefined && told !== newer) {
      told = newer;
      logger.error(
        { migration: newer },
        `the store was upgraded by a newer tokenproxy while this process runs (its migration ${newer} is unknown ` +
          'to this version): stop this process and run the new version; /readyz answers 503 store_too_new meanwhile',
      );
    }
    return newer;
  };
  const timer = setInterval(() => void check().catch(() => undefined), intervalMs);
  timer.unref();
  return { check, close: () => clearInterval(timer) };
}
