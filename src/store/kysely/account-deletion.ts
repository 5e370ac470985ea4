import { sql, type Kysely } from 'kysely';
import type { AccountHoldings, AccountTable } from '../account-records.js';
import type { Database } from '../schema.js';
import type { RepoContext } from './context.js';
import { transact } from './transact.js';

/**
 * Every table with an `account_id`, in the order an account's rows are deleted: rows that point at
 * others first (sessions and API keys, deliveries' attempts before deliveries before events, tokens
 * before the provider keys they use), the `accounts` row last. The type check below fails the build
 * when a table with an `account_id` is added to schema.ts and not here; a migration that adds one
 * without schema.ts is caught by the store test that reads the live schema (account-deletion.test.ts).
 */
export const ACCOUNT_TABLES = [
  'dashboard_sessions',
  'api_keys',
  'idempotency_keys',
  'delivery_attempts',
  'deliveries',
  'events',
  'webhooks',
  'anomalies',
  'request_logs',
  'usage_rollups',
  'usage_model_rollups',
  'usage',
  'audit_log',
  'tokens',
  'provider_keys',
] as const satisfies readonly AccountTable[];

type Forgotten = Exclude<AccountTable, (typeof ACCOUNT_TABLES)[number]>;
/** A compile error here names a table with an `account_id` that ACCOUNT_TABLES forgot. */
export const EVERY_ACCOUNT_TABLE_LISTED: [Forgotten] extends [never] ? true : Forgotten = true;

/** The tables that hold vault envelopes, purged from the files once the deletion commits. */
const SECRET_TABLES = ['provider_keys', 'webhooks', 'idempotency_keys'] as const;

export async function accountHoldings(db: Kysely<Database>, accountId: string): Promise<AccountHoldings> {
  const counts: Partial<Record<AccountTable, number>> = {};
  for (const table of ACCOUNT_TABLES) {
    const { rows } = await sql<{ n: number | string }>`
      select count(*) as n from ${sql.table(table)} where account_id = ${accountId}`.execute(db);
    counts[table] = Number(rows[0]?.n ?? 0);
  }
  return counts as AccountHoldings;
}

/** See AccountRepo.delete. */
export async function deleteAccount(
  ctx: RepoContext,
  accountId: string,
): Promise<AccountHoldings | undefined> {
  const deleted = await transact(ctx.db, async (trx) => {
    // Locked first (PostgreSQL): a token or key an API request inserts meanwhile waits on this row's
    // lock (its foreign key) and then fails, instead of outliving the account or failing this delete.
    const account = await ctx.dialect
      .forUpdate(trx.selectFrom('accounts').select('id').where('id', '=', accountId))
      .executeTakeFirst();
    if (account === undefined) return undefined;
    const counts = await deleteRows(trx, accountId);
    await trx.deleteFrom('accounts').where('id', '=', accountId).execute();
    return counts;
  });
  if (deleted !== undefined) {
    await ctx.afterCommit((db) => ctx.dialect.purgeDestroyedSecrets(db, SECRET_TABLES));
  }
  return deleted;
}

/** See AccountRepo.deleteLeftovers. */
export function deleteLeftovers(ctx: RepoContext, accountId: string): Promise<AccountHoldings | undefined> {
  return transact(ctx.db, async (trx) => {
    const account = await trx
      .selectFrom('accounts')
      .select('id')
      .where('id', '=', accountId)
      .executeTakeFirst();
    return account === undefined ? deleteRows(trx, accountId) : undefined;
  });
}

async function deleteRows(trx: Kysely<Database>, accountId: string): Promise<AccountHoldings> {
  const counts: Partial<Record<AccountTable, number>> = {};
  for (const table of ACCOUNT_TABLES) {
    const result = await sql`delete from ${sql.table(table)} where account_id = ${accountId}`.execute(trx);
    counts[table] = Number(result.numAffectedRows ?? 0n);
  }
  return counts as AccountHoldings;
}
