import { Migrator, type Kysely } from 'kysely';
import type { DialectName } from './dialect.js';
import { StoreUnavailableError } from './errors.js';
import { migrationProvider } from './migrations/index.js';
import type { Database } from './schema.js';

/**
 * Applies every pending migration and returns the names applied (empty when up to date). Kysely
 * serialises concurrent migrators (an advisory lock on PostgreSQL), so several processes starting
 * together is safe. An unreachable database surfaces as StoreUnavailableError.
 */
export async function migrateToLatest(db: Kysely<Database>, dialect: DialectName): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider(dialect) });
  const { error, results } = await migrator.migrateToLatest();
  if (error === undefined) {
    return (results ?? [])
      .filter((result) => result.status === 'Success')
      .map((result) => result.migrationName);
  }
  if (error instanceof StoreUnavailableError) throw error;
  // Kysely's words for a store a newer tokenproxy upgraded: say it as an operator can act on it.
  const newer = /previously executed migration (\S+) is missing/.exec(
    error instanceof Error ? error.message : '',
  );
  if (newer !== null) {
    throw new Error(
      `the store was upgraded by a newer tokenproxy (its migration ${newer[1]} is unknown to this version): ` +
        'run that version (or newer), or restore the backup made before the upgrade',
      { cause: error },
    );
  }
  const failed = results?.find((result) => result.status === 'Error')?.migrationName;
  const reason = error instanceof Error ? error.message : typeof error === 'string' ? error : 'unknown error';
  const what = failed === undefined ? 'database migrations failed' : `database migration ${failed} failed`;
  throw new Error(`${what}: ${reason}`, { cause: error });
}
