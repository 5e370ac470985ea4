import { budgetText } from '../../usage/budget.js';
import { newId } from '../../ids/formats.js';
import type { AccountHoldings, AccountPatch, AccountRepo, NewAccount } from '../store.js';
import type { AccountRecord } from '../records.js';
import type { RepoContext } from './context.js';
import { accountHoldings, deleteAccount, deleteLeftovers } from './account-deletion.js';
import { toAccount } from './rows.js';
import { transact } from './transact.js';

export class KyselyAccountRepo implements AccountRepo {
  constructor(private readonly ctx: RepoContext) {}

  async create(account: NewAccount): Promise<AccountRecord> {
    return transact(this.ctx.db, async (trx) => {
      const row = await trx
        .insertInto('accounts')
        .values({
          id: account.id,
          name: account.name,
          plan: account.plan,
          alert_email: null,
          created_at: account.createdAt,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx
        .insertInto('api_keys')
        .values({
          digest: account.apiKeyDigest,
          id: account.apiKeyId ?? newId('apiKey'),
          name: 'default',
          scope: 'full',
          account_id: account.id,
          start: account.apiKeyStart,
          created_at: account.createdAt,
          revoked_at: null,
        })
        .execute();
      return toAccount(row);
    });
  }

  async count(): Promise<number> {
    const row = await this.ctx.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return row.n;
  }

  async get(accountId: string): Promise<AccountRecord | undefined> {
    const row = await this.ctx.db
      .selectFrom('accounts')
      .selectAll()
      .where('id', '=', accountId)
      .executeTakeFirst();
    return row === undefined ? undefined : toAccount(row);
  }

  async findByApiKeyDigest(digest: string): Promise<AccountRecord | undefined> {
    const row = await this.ctx.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .selectAll('accounts')
      .where('api_keys.digest', '=', digest)
      .where('api_keys.revoked_at', 'is', null)
      .executeTakeFirst();
    return row === undefined ? undefined : toAccount(row);
  }

  async update(accountId: string, patch: AccountPatch): Promise<AccountRecord | undefined> {
    const changes = {
      ...(patch.name === undefined ? {} : { name: patch.name }),
      ...(patch.alertEmail === undefined ? {} : { alert_email: patch.alertEmail }),
      ...(patch.budget === undefined ? {} : { budget: budgetText(patch.budget) }),
    };
    if (Object.keys(changes).length === 0) return this.get(accountId);
    const row = await this.ctx.db
      .updateTable('accounts')
      .set(changes)
      .where('id', '=', accountId)
      .returningAll()
      .executeTakeFirst();
    return row === undefined ? undefined : toAccount(row);
  }

  async listAll(): Promise<readonly AccountRecord[]> {
    const rows = await this.ctx.db
      .selectFrom('accounts')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toAccount);
  }

  async setPlan(accountId: string, plan: string): Promise<AccountRecord | undefined> {
    const row = await this.ctx.db
      .updateTable('accounts')
      .set({ plan })
      .where('id', '=', accountId)
      .returningAll()
      .executeTakeFirst();
    return row === undefined ? undefined : toAccount(row);
  }

  async countActiveTokens(accountId: string, now: string): Promise<number> {
    return countActiveTokens(this.ctx.db, accountId, now);
  }

  async usage(accountId: string, period: string): Promise<number> {
    const row = await this.ctx.db
      .selectFrom('usage')
      .select('requests')
      .where('account_id', '=', accountId)
      .where('period', '=', period)
      .executeTakeFirst();
    return row?.requests ?? 0;
  }

  holdings(accountId: string): Promise<AccountHoldings> {
    return accountHoldings(this.ctx.db, accountId);
  }

  delete(accountId: string): Promise<AccountHoldings | undefined> {
    return deleteAccount(this.ctx, accountId);
  }

  deleteLeftovers(accountId: string): Promise<AccountHoldings | undefined> {
    return deleteLeftovers(this.ctx, accountId);
  }
}

/** Stored 'active' and not past expiry at `now`: the tokens that count against the plan. */
export async function countActiveTokens(
  db: RepoContext['db'],
  accountId: string,
  now: string,
): Promise<number> {
  const row = await db
    .selectFrom('tokens')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('status', '=', 'active')
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirstOrThrow();
  return row.n;
}
