/**
 * Errors the store raises. The API layer turns them into TokenProxyError codes; the store itself
 * knows nothing of HTTP. Each carries a stable `code` (logged by errorSummary); callers decide on the
 * class, never on the message.
 */

/**
 * Why the store cannot serve: it cannot be reached (`unreachable`), or it answers but refuses to
 * store anything because its disk is full (`full`: SQLITE_FULL, PostgreSQL 53100) or it is
 * read-only (`read_only`: SQLITE_READONLY, PostgreSQL 25006). Those two pass once the operator
 * frees space or makes it writable again; nothing needs restarting. `cancelled`: PostgreSQL cancelled
 * the statement before it finished (statement_timeout, lock_timeout, idle_in_transaction_session_timeout,
 * an administrator), rolling its transaction back; the next try may pass. `file_missing`,
 * `file_replaced`: SQLite's file (or its -wal) is no longer at its path, so what this process stores
 * is lost when it stops; it refuses changes until the file is back or the server restarts.
 */
export type StoreUnavailableReason =
  'unreachable' | 'full' | 'read_only' | 'cancelled' | 'file_missing' | 'file_replaced';

/**
 * The database cannot be reached, refuses every write for a while (its disk is full, read-only), or
 * cancelled the statement: nothing was stored, and the caller may wait and retry.
 */
export class StoreUnavailableError extends Error {
  readonly code = 'store_unavailable';
  readonly reason: StoreUnavailableReason;
  constructor(message: string, options?: { cause?: unknown; reason?: StoreUnavailableReason }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
    this.reason = options?.reason ?? 'unreachable';
  }
}

export class StorePlanLimitError extends Error {
  readonly code = 'store_plan_limit';
  constructor(readonly limit: number) {
    super(`the plan allows ${limit} active tokens`);
    this.name = 'StorePlanLimitError';
  }
}

export class StoreNotFoundError extends Error {
  readonly code = 'store_not_found';
  constructor(readonly what: 'key' | 'account') {
    super(`${what} not found`);
    this.name = 'StoreNotFoundError';
  }
}

export class StoreConflictError extends Error {
  readonly code = 'store_conflict';
  constructor(readonly reason: 'key_deleted' | 'provider_mismatch' | 'token_not_active') {
    super(reason);
    this.name = 'StoreConflictError';
  }
}

/**
 * The store's schema has a migration this tokenproxy does not know: a newer version upgraded it. Not
 * a bad setting (exit 1): the store is fine, this binary is too old for it.
 */
export class StoreTooNewError extends Error {
  readonly code = 'store_too_new';
  constructor(
    readonly migration: string,
    options?: { cause?: unknown },
  ) {
    super(
      `the store was upgraded by a newer tokenproxy (its migration ${migration} is unknown to this version): ` +
        'run that version (or newer), or restore the backup made before the upgrade',
      options,
    );
    this.name = 'StoreTooNewError';
  }
}

/** A migration failed; the database's own words say why. */
export class StoreMigrationError extends Error {
  readonly code = 'store_migration_failed';
  constructor(
    readonly migration: string | undefined,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${migration === undefined ? 'database migrations failed' : `database migration ${migration} failed`}: ${reason}`,
      options,
    );
    this.name = 'StoreMigrationError';
  }
}
