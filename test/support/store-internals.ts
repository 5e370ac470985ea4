import type { Kysely } from 'kysely';
import type { DialectSupport } from '../../src/store/dialect.js';
import type { Database } from '../../src/store/schema.js';
import type { Store } from '../../src/store/store.js';

/**
 * A store's own connection and dialect (private fields of KyselyStore at runtime). For tests that must
 * see or shape the database as stored, not as the repos show it: raw rows, triggers, old schemas.
 */
export function storeInternals(store: Store): { db: Kysely<Database>; support: DialectSupport } {
  return store as unknown as { db: Kysely<Database>; support: DialectSupport };
}

/** The store's own connection: see {@link storeInternals}. */
export function storeDb(store: Store): Kysely<Database> {
  return storeInternals(store).db;
}
