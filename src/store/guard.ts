import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import { StoreUnavailableError, type StoreUnavailableReason } from './errors.js';

/**
 * Connection-level failures become StoreUnavailableError here, at the driver, so every query of
 * every repository (and the migrator) reports them the same way without a try/catch per method.
 * So do refusals of a database that answers but stores nothing for a while (disk full, read-only),
 * and statements the database cancelled (a timeout set on it): callers treat them alike (503
 * `store_unavailable`, log records kept and retried), and the message says which it is.
 */

export type WriteRefusal = Extract<StoreUnavailableReason, 'full' | 'read_only'>;

export interface GuardOptions {
  readonly isConnectionFailure: (error: unknown) => boolean;
  /** The refusal an error of the driver stands for (`full`, `read_only`), or undefined. */
  readonly writeRefusal?: ((error: unknown) => WriteRefusal | undefined) | undefined;
  /**
   * Whether the database cancelled the statement (a time limit set on it ran out, or an
   * administrator cancelled it): its transaction is rolled back, and a retry may pass. Not a state
   * of the store, so /readyz is not told.
   */
  readonly cancelled?: ((error: unknown) => boolean) | undefined;
  /**
   * A refusal the store makes on purpose, checked before the others (SQLite's `query_only` while its
   * file is lost, which SQLite words as a read-only database): its own error, or undefined.
   */
  readonly ownRefusal?: ((error: unknown) => StoreUnavailableError | undefined) | undefined;
  /** Told of each refusal and of each write that got through, for /readyz. */
  readonly health?: WriteHealth | undefined;
  /** Database description for messages, e.g. `PostgreSQL at postgres://host:5432/db`. */
  readonly describe: string;
  /** Strings that must never appear in a message (a password from the URL). */
  readonly secrets: readonly string[];
  /** A sentence added to an unreachable store's message when the dialect can tell more (a full disk). */
  readonly explain?: ((error: unknown) => string | undefined) | undefined;
}

/** How long a refusal is reported without a write since: long enough for a probe to see it. */
export const WRITE_REFUSAL_MEMORY_MS = 60_000;

/**
 * Whether the store lately refused a write (disk full, read-only): set by a refusal, cleared by the
 * next write that commits, forgotten after WRITE_REFUSAL_MEMORY_MS without a refusal (a store nobody
 * writes to cannot tell, and an old refusal must not keep /readyz degraded for ever).
 */
export class WriteHealth {
  #last: { readonly reason: WriteRefusal; readonly at: number } | undefined;
  /** A monotonic clock by default: a wall clock stepped back must not keep /readyz degraded for the step. */
  constructor(private readonly now: () => number = () => performance.now()) {}

  refused(reason: WriteRefusal): void {
    this.#last = { reason, at: this.now() };
  }

  wrote(): void {
    this.#last = undefined;
  }

  /** The refusal of the last WRITE_REFUSAL_MEMORY_MS with no write since, else undefined. */
  current(): WriteRefusal | undefined {
    const last = this.#last;
    if (last === undefined) return undefined;
    if (this.now() - last.at > WRITE_REFUSAL_MEMORY_MS) {
      this.#last = undefined;
      return undefined;
    }
    return last.reason;
  }
}

const WRITE_KINDS = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode']);

class Guard {
  /** Connections inside a transaction, and whether it wrote: its writes count once it commits. */
  readonly transactions = new WeakMap<DatabaseConnection, { wrote: boolean }>();
  constructor(private readonly options: GuardOptions) {}

  map(error: unknown, always = false): unknown {
    if (error instanceof StoreUnavailableError) return error;
    const own = this.options.ownRefusal?.(error);
    if (own !== undefined) return own;
    const refusal = this.options.writeRefusal?.(error);
    if (refusal !== undefined) {
      this.options.health?.refused(refusal);
      return refused(this.options, error, refusal);
    }
    if (this.options.cancelled?.(error) === true) return cancelled(this.options, error);
    if (!always && !this.options.isConnectionFailure(error)) return error;
    return unavailable(this.options, error);
  }

  wrote(): void {
    this.options.health?.wrote();
  }

  async run<T>(operation: () => Promise<T>, always = false): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw this.map(error, always);
    }
  }
}

/**
 * The one message of an unreachable store: the database described, the driver's reason, and none of
 * the URL's secrets (also used where a connection of its own fails first: the serve lock).
 */
export function unavailable(
  options: Pick<GuardOptions, 'describe' | 'secrets' | 'explain'>,
  error: unknown,
): StoreUnavailableError {
  const text = driverWords(options, error);
  const more = options.explain?.(error);
  return new StoreUnavailableError(
    `${options.describe} is unavailable: ${text === '' ? 'connection failed' : text}${more === undefined ? '' : `; ${more}`}`,
    { cause: error, ...(more === undefined ? {} : { reason: 'full' as const }) },
  );
}

/** The driver's reason (each inner error's of an AggregateError), with the URL's secrets masked. */
function driverWords(options: Pick<GuardOptions, 'secrets'>, error: unknown): string {
  let text = error instanceof Error ? error.message : String(error);
  if (text === '' && error instanceof AggregateError) {
    text = error.errors.map((inner) => (inner instanceof Error ? inner.message : String(inner))).join('; ');
  }
  for (const secret of options.secrets) {
    if (secret !== '') text = text.split(secret).join('***');
  }
  return text;
}

const REFUSAL_WORDS: Record<WriteRefusal, string> = {
  full: 'its disk is full, so nothing can be stored until space is freed',
  read_only: 'it is read-only, so nothing can be stored until it is writable again',
};

/** A database that answers but stores nothing: which, what to do, and the driver's words. */
function refused(options: GuardOptions, error: unknown, reason: WriteRefusal): StoreUnavailableError {
  const text = driverWords(options, error);
  return new StoreUnavailableError(`${options.describe} refuses writes: ${REFUSAL_WORDS[reason]} (${text})`, {
    cause: error,
    reason,
  });
}

/**
 * A cancelled statement, worded so it is true of every cause (the SQLSTATE is shared by the
 * timeouts and an administrator's cancel; the database's words in brackets tell which).
 */
function cancelled(options: GuardOptions, error: unknown): StoreUnavailableError {
  return new StoreUnavailableError(
    `${options.describe} cancelled the statement before it finished, so its transaction was rolled back ` +
      'and nothing was changed: a time limit set on the database ran out (statement_timeout, lock_timeout, ' +
      `idle_in_transaction_session_timeout) or an administrator cancelled it (${driverWords(options, error)}); ` +
      'retry, and raise the limit if it keeps happening',
    { cause: error, reason: 'cancelled' },
  );
}

class GuardedConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private readonly guard: Guard,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.guard.run(() => this.inner.executeQuery<R>(query));
    // Outside a transaction a write that returns is stored; inside one, only its commit says so.
    if (WRITE_KINDS.has(query.query.kind)) {
      const transaction = this.guard.transactions.get(this);
      if (transaction === undefined) this.guard.wrote();
      else transaction.wrote = true;
    }
    return result;
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    try {
      yield* this.inner.streamQuery<R>(query, chunkSize);
    } catch (error) {
      throw this.guard.map(error);
    }
  }
}

function unwrap(connection: DatabaseConnection): DatabaseConnection {
  return connection instanceof GuardedConnection ? connection.inner : connection;
}

type CompileQuery = QueryCompiler['compileQuery'];

class GuardedDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly guard: Guard,
  ) {}

  init(): Promise<void> {
    // Initialising opens the SQLite file (or creates the pool): any failure means no database.
    return this.guard.run(() => this.inner.init(), true);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.guard.run(() => this.inner.acquireConnection());
    return new GuardedConnection(connection, this.guard);
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await this.guard.run(() => this.inner.beginTransaction(unwrap(connection), settings));
    this.guard.transactions.set(connection, { wrote: false });
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await this.guard.run(() => this.inner.commitTransaction(unwrap(connection)));
    const wrote = this.guard.transactions.get(connection)?.wrote === true;
    this.guard.transactions.delete(connection);
    if (wrote) this.guard.wrote();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    this.guard.transactions.delete(connection);
    await this.guard.run(() => this.inner.rollbackTransaction(unwrap(connection)));
  }

  savepoint(connection: DatabaseConnection, name: string, compile: CompileQuery): Promise<void> {
    return this.guard.run(async () => {
      if (this.inner.savepoint === undefined) throw unsupported('savepoint');
      await this.inner.savepoint(unwrap(connection), name, compile);
    });
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: CompileQuery): Promise<void> {
    return this.guard.run(async () => {
      if (this.inner.rollbackToSavepoint === undefined) throw unsupported('rollbackToSavepoint');
      await this.inner.rollbackToSavepoint(unwrap(connection), name, compile);
    });
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: CompileQuery): Promise<void> {
    return this.guard.run(async () => {
      if (this.inner.releaseSavepoint === undefined) throw unsupported('releaseSavepoint');
      await this.inner.releaseSavepoint(unwrap(connection), name, compile);
    });
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(unwrap(connection));
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

function unsupported(method: string): Error {
  return new Error(`the database driver does not support ${method}`);
}

export function guardDialect(inner: Dialect, options: GuardOptions): Dialect {
  const guard = new Guard(options);
  const dialect: Dialect = {
    createDriver: () => new GuardedDriver(inner.createDriver(), guard),
    createQueryCompiler: () => inner.createQueryCompiler(),
    createAdapter: () => inner.createAdapter(),
    createIntrospector: (db) => inner.createIntrospector(db),
  };
  return dialect;
}
