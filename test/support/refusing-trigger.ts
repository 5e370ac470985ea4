import { sql } from 'kysely';
import type { Store } from '../../src/store/store.js';
import { storeDb } from './store-internals.js';

/**
 * Makes the real database refuse every `statement` on `table` with `message` (a trigger), so a test
 * can show that work fails whole when one of its statements fails. Returns what undoes it.
 */
export async function refuseStatements(
  store: Store,
  table: string,
  statement: 'insert' | 'delete',
  message: string,
): Promise<() => Promise<void>> {
  const db = storeDb(store);
  const name = `refuse_${statement}_${table}`;
  if (store.dialect === 'sqlite') {
    await sql
      .raw(
        `create trigger ${name} before ${statement} on ${table} begin select raise(abort, '${message}'); end`,
      )
      .execute(db);
    return async () => {
      await sql.raw(`drop trigger ${name}`).execute(db);
    };
  }
  await sql
    .raw(
      `create function ${name}() returns trigger language plpgsql as $$ begin raise exception '${message}'; end $$;
       create trigger ${name} before ${statement} on ${table} for each row execute function ${name}()`,
    )
    .execute(db);
  return async () => {
    await sql.raw(`drop trigger ${name} on ${table}; drop function ${name}`).execute(db);
  };
}
