import { DEFAULT_MIGRATION_TABLE, Migrator, sql, type Kysely } from 'kysely';
import type { DialectName } from './dialect.js';
import { StoreMigrationError, StoreTooNewError, StoreUnavailableError } from './errors.js';
import { MIGRATION_NAMES, migrationProvider } from './migrations/index.js';
import type { Database } from './schema.js';

/**
 * Applies every pending migration and returns the names applied (empty when up to date). Kysely
 * serialises concurrent migrators (an advisory lock on PostgreSQL), so several processes starting
 * together is safe. An unreachable database surfaces as StoreUnavailableError, a store a newer
 * tokenproxy upgraded as StoreTooNewError, any other failure as StoreMigrationError.
 */
export async function migrateToLatest(db: Kysely<Database>, dialect: DialectName): Promise<string[]> {
  // Unordered: the branches that brought 0010–0014 were merged out of name order, so a store made
  // between those merges has a later migration without an earlier one (0014 without 0011–0013, or
  // 0012–0014 without 0011). Each pending one is applied in name order, whatever was applied after
  // it; none of them depends on another of that set (docs/decisions.md). A recorded name this
  // version does not know still fails, below, as a store a newer tokenproxy upgraded.
  const migrator = new Migrator({ db, provider: migrationProvider(dialect), allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error === undefined) {
    return (results ?? [])
      .filter((result) => result.status === 'Success')
      .map((result) => result.migrationName);
  }
  if (error instanceof StoreUnavailableError) throw error;
  // Kysely calls this "corrupted migrations" in a plain Error: the recorded names tell it apart,
  // where the wording of Kysely's message could change under us.
  const unknown = await newerMigration(db);
  if (unknown !== undefined) throw new StoreTooNewError(unknown, { cause: error });
  const failed = results?.find((result) => result.status === 'Error')?.migrationName;
  const reason = error instanceof Error ? error.message : typeof error === 'string' ? error : 'unknown error';
  throw new StoreMigrationError(failed, reason, { cause: error });
}

/**
 * The first migration the store records that this version does not have, if any: a newer tokenproxy
 * upgraded the store (before this start, or since).
 */
export async function newerMigration(db: Kysely<Database>): Promise<string | undefined> {
  try {
    const { rows } = await sql<{
      name: string;
    }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)}`.execute(db);
    return rows.map((row) => row.name).find((name) => !MIGRATION_NAMES.includes(name));
  } catch {
    // No table to read (or the database went away): not a newer store, as far as can be told.
    return undefined;
  }
}
