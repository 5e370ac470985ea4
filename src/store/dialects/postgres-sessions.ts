import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

/**
 * The pool Kysely is given, over pg's. The server can end a session while its client is checked out
 * of the pool: `idle_in_transaction_session_timeout` or `transaction_timeout` between two statements
 * of a transaction, `pg_terminate_backend`. pg then emits 'error' on the client, and pg-pool listens
 * only while a client is idle: an 'error' nobody listens to ended the whole process. Every client
 * here is listened to for its whole life, and the error that ended its session is kept and given to
 * each later query on it (its ROLLBACK included) in place of pg's "not queryable": the caller learns
 * why, in the database's words and SQLSTATE (25P03 reads as a cancellation, not as a lost database).
 */
export function sessionPool(pool: pg.Pool): PostgresPool {
  const clients = new WeakMap<pg.PoolClient, SessionClient>();
  pool.on('connect', (client) => {
    client.on('error', (error) => clientOf(client).ended(error));
  });
  function clientOf(client: pg.PoolClient): SessionClient {
    let session = clients.get(client);
    if (session === undefined) {
      session = new SessionClient(client);
      clients.set(client, session);
    }
    return session;
  }
  return {
    // The same wrapper for the same pg client: Kysely keeps one connection object per client.
    connect: async () => clientOf(await pool.connect()),
    end: () => pool.end(),
  };
}

class SessionClient implements PostgresPoolClient {
  /** What ended the session, the first of the errors pg reports for it; undefined while it lives. */
  #end: Error | undefined;

  constructor(private readonly client: pg.PoolClient) {}

  ended(error: Error): void {
    this.#end ??= error;
  }

  query<R>(sql: string, parameters: readonly unknown[]): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    sqlOrCursor: string | PostgresCursor<R>,
    parameters: readonly unknown[] = [],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // The dialect is configured without a cursor class, so Kysely never streams through one.
    if (typeof sqlOrCursor !== 'string') throw new Error('the store does not stream with cursors');
    if (this.#end !== undefined) return Promise.reject(this.#end);
    return this.client.query(sqlOrCursor, [...parameters]).then(
      (result) => result as unknown as PostgresQueryResult<R>,
      (error: unknown) => {
        // A FATAL answer to this very query ended the session too (a timeout while it ran).
        if (error instanceof Error && (error as { severity?: unknown }).severity === 'FATAL')
          this.ended(error);
        throw this.#end ?? error;
      },
    );
  }

  release(): void {
    // An ended session goes, not back to the pool (pg-pool would also tell by itself, later).
    this.client.release(this.#end);
  }
}
