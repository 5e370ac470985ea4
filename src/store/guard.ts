import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import { StoreUnavailableError } from './errors.js';

/**
 * Connection-level failures become StoreUnavailableError here, at the driver, so every query of
 * every repository (and the migrator) reports them the same way without a try/catch per method.
 */

export interface GuardOptions {
  readonly isConnectionFailure: (error: unknown) => boolean;
  /** Database description for messages, e.g. `PostgreSQL at postgres://host:5432/db`. */
  readonly describe: string;
  /** Strings that must never appear in a message (a password from the URL). */
  readonly secrets: readonly string[];
}

class Guard {
  constructor(private readonly options: GuardOptions) {}

  map(error: unknown, always = false): unknown {
    if (error instanceof StoreUnavailableError) return error;
    if (!always && !this.options.isConnectionFailure(error)) return error;
    return unavailable(this.options, error);
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
  options: Pick<GuardOptions, 'describe' | 'secrets'>,
  error: unknown,
): StoreUnavailableError {
  let text = error instanceof Error ? error.message : String(error);
  if (text === '' && error instanceof AggregateError) {
    text = error.errors.map((inner) => (inner instanceof Error ? inner.message : String(inner))).join('; ');
  }
  for (const secret of options.secrets) {
    if (secret !== '') text = text.split(secret).join('***');
  }
  return new StoreUnavailableError(
    `${options.describe} is unavailable: ${text === '' ? 'connection failed' : text}`,
    { cause: error },
  );
}

class GuardedConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private readonly guard: Guard,
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.guard.run(() => this.inner.executeQuery<R>(query));
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

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.guard.run(() => this.inner.beginTransaction(unwrap(connection), settings));
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.guard.run(() => this.inner.commitTransaction(unwrap(connection)));
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.guard.run(() => this.inner.rollbackTransaction(unwrap(connection)));
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
