import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

/**
 * Runs `work` in a transaction, or inside the caller's when `db` already is one: a repo method that
 * needs its statements atomic keeps them so when `Store.transaction` groups it with others (a change
 * and its audit entry), where Kysely would refuse a nested `transaction()`.
 */
export function transact<T>(db: Kysely<Database>, work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db);
  return db.transaction().execute(work);
}
