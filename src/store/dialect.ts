import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { StoreFileLoss } from './dialects/sqlite-file-watch.js';
import type { WriteRefusal } from './guard.js';
import type { Database } from './schema.js';

export type DialectName = 'sqlite' | 'postgres';

/** The tables that hold vault envelopes. */
export type SecretTable = 'provider_keys' | 'webhooks' | 'idempotency_keys';

/** What differs between the dialects once the Kysely instance exists. Everything else is shared. */
export interface DialectSupport {
  readonly name: DialectName;
  /** Where the database lives, safe to print: a file path, or a URL without credentials. */
  readonly target: string;
  /** Locks the selected rows until the transaction ends, where the database needs it. */
  forUpdate<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /**
   * Locks the selected rows, skipping rows another transaction holds (PostgreSQL), so several
   * processes claiming outbox work each get different rows. SQLite has one writer at a time anyway.
   */
  forUpdateSkipLocked<DB, TB extends keyof DB, O>(
    query: SelectQueryBuilder<DB, TB, O>,
  ): SelectQueryBuilder<DB, TB, O>;
  /** True when the error means the database could not be reached, as opposed to a failed statement. */
  isConnectionFailure(error: unknown): boolean;
  /**
   * Whether this connection's writes were lately refused (disk full, read-only) with none stored
   * since: reads still work, so a ping alone would call the store ready.
   */
  writeRefusal?(): WriteRefusal | undefined;
  /**
   * SQLite, when asked to watch its files: the first of them whose path no longer names the file
   * this connection has open (deleted, replaced); changes are refused meanwhile.
   */
  fileLoss?(): StoreFileLoss | undefined;
  /**
   * Runs after a transaction that destroyed or replaced secrets in `tables`, to push their old bytes
   * out of the live files (SQLite: its WAL; PostgreSQL: the tables' dead row versions).
   */
  purgeDestroyedSecrets(db: Kysely<Database>, tables: readonly SecretTable[]): Promise<void>;
  /**
   * SQLite in incremental auto-vacuum mode: returns up to `pages` free pages to the file system.
   * Absent where the database does this itself (PostgreSQL's autovacuum).
   */
  incrementalVacuum?(db: Kysely<Database>, pages: number): Promise<void>;
}

export interface DialectDatabase {
  readonly db: Kysely<Database>;
  readonly dialect: DialectSupport;
}
