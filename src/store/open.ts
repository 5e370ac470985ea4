import { ConfigError } from '../config/config-error.js';
import type { DialectDatabase } from './dialect.js';
import type { StoreFileReport } from './dialects/sqlite-file-watch.js';
import { KyselyStore, type StoreWarn } from './kysely-store.js';
import type { Store } from './store.js';

export interface OpenStoreOptions {
  /** The `database` setting: empty for SQLite in `dataDir`, or a `postgres://` / `postgresql://` URL. */
  readonly database: string | undefined;
  readonly dataDir: string;
  /** PostgreSQL only: how long to wait for a connection before StoreUnavailableError. */
  readonly connectionTimeoutMs?: number | undefined;
  /**
   * The connection of the log worker, which writes request-log and anomaly rows and the request
   * counts and usage that go with them. On SQLite its commits are not fsynced one by one
   * (`synchronous = NORMAL`); other connections keep FULL.
   */
  readonly logWriter?: boolean | undefined;
  /** Failures the store reports rather than throws (see `Store.transaction`); a process warning if absent. */
  readonly warn?: StoreWarn | undefined;
  /**
   * SQLite: watch the store's file and its -wal every few seconds, and tell this when either is
   * deleted or replaced (and when it is back); meanwhile changes are refused and `fileLoss()` says
   * which. For the server's own connection: the log writer's and the commands' go without.
   * Ignored for PostgreSQL.
   */
  readonly watchFile?: StoreFileReport | undefined;
}

/** A store that can also report the migrations it applies (for `tokenproxy migrate`). */
export interface MigratableStore extends Store {
  migrateToLatest(): Promise<string[]>;
}

/** Each dialect is loaded only when used: a process never needs both drivers in its heap. */
async function openDatabase(options: OpenStoreOptions): Promise<DialectDatabase> {
  const { database } = options;
  if (database === undefined || database.trim() === '') {
    const sqlite = await import('./dialects/sqlite.js');
    return sqlite.createDatabase({
      dataDir: options.dataDir,
      logWriter: options.logWriter,
      watchFile: options.watchFile,
    });
  }
  if (/^postgres(ql)?:\/\//i.test(database)) {
    const postgres = await import('./dialects/postgres.js');
    return postgres.createDatabase({ url: database, connectionTimeoutMs: options.connectionTimeoutMs });
  }
  // Echo only the scheme: the rest of a mistyped URL may well contain a password.
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(database)?.[1];
  const got = scheme === undefined ? 'a value that is not a URL' : `a ${scheme}: URL`;
  // loadConfig refuses this first; a caller that skipped it still gets a bad setting (exit 2).
  throw new ConfigError(
    `Setting "database": expected empty (SQLite in the data directory) or a postgres:// or postgresql:// URL, got ${got}.`,
  );
}

/** Opens the store without touching the schema; nothing connects until the first query. */
export function openStoreWithoutMigrating(options: OpenStoreOptions): Promise<MigratableStore> {
  // A bad setting rejects rather than throwing synchronously.
  return openDatabase(options).then(({ db, dialect }) => new KyselyStore(db, dialect, options.warn));
}

/** Opens the store and migrates it to the latest schema, so callers always see the current tables. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const store = await openStoreWithoutMigrating(options);
  try {
    await store.migrateToLatest();
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}
