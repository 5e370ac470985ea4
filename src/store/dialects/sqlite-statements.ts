import type SqliteDatabase from 'better-sqlite3';
import type { SqliteDatabase as KyselySqliteDatabase } from 'kysely';

/** Distinct SQL texts kept prepared per connection; the store issues a few dozen. */
export const STATEMENT_CACHE_SIZE = 200;

/**
 * Kysely's SQLite driver prepares every query afresh, so SQLite parses and plans the same text each
 * time: for the log worker's INSERTs that was ~2.5 µs of CPU per row (measured), more than storing
 * the row. This hands Kysely the connection with its recently used statements kept prepared.
 *
 * A statement still being iterated (a streamed query) is `busy`; asking for its text again then
 * gets a fresh statement, so one text can be in use twice. Statements survive schema changes:
 * SQLite re-plans them itself when a migration alters a table. An evicted statement is finalized
 * when the garbage collector takes it (better-sqlite3 has no explicit finalize).
 */
export function withStatementCache(
  db: SqliteDatabase.Database,
  capacity = STATEMENT_CACHE_SIZE,
): KyselySqliteDatabase {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    prepare(sql: string): SqliteDatabase.Statement {
      const cached = cache.get(sql);
      if (cached !== undefined) {
        if (cached.busy) return db.prepare(sql);
        // A Map iterates in insertion order: re-inserting keeps the least recently used first.
        cache.delete(sql);
        cache.set(sql, cached);
        return cached;
      }
      const statement = db.prepare(sql);
      cache.set(sql, statement);
      if (cache.size > capacity) {
        const oldest = cache.keys().next();
        if (oldest.done !== true) cache.delete(oldest.value);
      }
      return statement;
    },
    close(): void {
      cache.clear();
      db.close();
    },
  };
}
