import { sql } from 'kysely';
import type { Store } from '../../src/store/store.js';
import { storeDb } from './store-internals.js';

export const AUDIT_REFUSAL = 'audit log refused by the test';

/**
 * Makes the real database refuse every insert into `audit_log` (a trigger), so a test can show that a
 * change fails whole when its audit entry cannot be written. Returns what undoes it.
 */
export async function refuseAuditEntries(store: Store): Promise<() => Promise<void>> {
  // The trigger is the database's, not the API's.
  const db = storeDb(store);
  if (store.dialect === 'sqlite') {
    await sql
      .raw(
        `create trigger audit_refused before insert on audit_log begin select raise(abort, '${AUDIT_REFUSAL}'); end`,
      )
      .execute(db);
    return async () => {
      await sql.raw('drop trigger audit_refused').execute(db);
    };
  }
  await sql
    .raw(
      `create function audit_refused() returns trigger language plpgsql as $$ begin raise exception '${AUDIT_REFUSAL}'; end $$;
       create trigger audit_refused before insert on audit_log for each row execute function audit_refused()`,
    )
    .execute(db);
  return async () => {
    await sql.raw('drop trigger audit_refused on audit_log; drop function audit_refused').execute(db);
  };
}
