import { budgetText } from '../../usage/budget.js';
import { sql, type Kysely, type Updateable } from 'kysely';
import { usagePeriod } from '../../accounts/plans.js';
import { StoreConflictError, StoreNotFoundError, StorePlanLimitError } from '../errors.js';
import type { Page, PageQuery, TokenRecord, TokenStatus } from '../records.js';
import type { Database, TokensTable } from '../schema.js';
import type {
  TokenCreation,
  TokenEventBuilder,
  TokenPatch,
  TokenRepo,
  TokenRevocation,
  TokenUsage,
  TokenWithKey,
} from '../store.js';
import { countActiveTokens } from './accounts.js';
import type { RepoContext } from './context.js';
import { insertEvents } from './events.js';
import { insertKey, lockKey } from './keys.js';
import { newestFirstPage, rateLimitText, toToken } from './rows.js';
import { transact } from './transact.js';

/**
 * Active tokens past `expires_at`, oldest first: the expiry sweep's query. It runs every sweep on
 * every server, so it must stay an index search (tokens_status_expires_idx, migration 0005); a test
 * checks the plan on both databases.
 */
export function dueForExpiry(db: Kysely<Database>, now: string, limit: number) {
  return db
    .selectFrom('tokens')
    .select('id')
    .where('status', '=', 'active')
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit);
}

export class KyselyTokenRepo implements TokenRepo {
  constructor(private readonly ctx: RepoContext) {}

  async create(creation: TokenCreation): Promise<TokenRecord> {
    const { token, key, maxActiveTokens } = creation;
    return transact(this.ctx.db, async (trx) => {
      // Concurrent creates for one account queue here on PostgreSQL, so the count below cannot be
      // stale; SQLite transactions already hold the write lock from BEGIN.
      const account = await this.ctx.dialect
        .forUpdate(trx.selectFrom('accounts').select('id').where('id', '=', token.accountId))
        .executeTakeFirst();
      if (account === undefined) throw new StoreNotFoundError('account');

      let keyId: string;
      if ('existingKeyId' in key) {
        const existing = await lockKey(this.ctx, trx, token.accountId, key.existingKeyId);
        if (existing === undefined) throw new StoreNotFoundError('key');
        if (existing.deleted) throw new StoreConflictError('key_deleted');
        if (existing.provider !== token.provider) throw new StoreConflictError('provider_mismatch');
        keyId = key.existingKeyId;
      } else {
        if (key.newKey.accountId !== token.accountId)
          throw new Error('a new key must belong to the token account');
        if (key.newKey.provider !== token.provider) throw new StoreConflictError('provider_mismatch');
        keyId = key.newKey.id;
      }

      if (maxActiveTokens !== null) {
        const active = await countActiveTokens(trx, token.accountId, token.createdAt);
        if (active >= maxActiveTokens) throw new StorePlanLimitError(maxActiveTokens);
      }

      if ('newKey' in key) await insertKey(trx, key.newKey);
      const row = await trx
        .insertInto('tokens')
        .values({
          id: token.id,
          account_id: token.accountId,
          name: token.name,
          provider: token.provider,
          key_id: keyId,
          digest: token.digest,
          hint: token.hint,
          authorized_origins: JSON.stringify(token.authorizedOrigins),
          authorized_ips: JSON.stringify(token.authorizedIps),
          rate_limit: rateLimitText(token.rateLimit),
          budget: budgetText(token.budget ?? null),
          status: 'active',
          created_at: token.createdAt,
          last_used_at: null,
          expires_at: token.expiresAt,
          revoked_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toToken(row);
    });
  }

  async withBudgets(accountId: string): Promise<readonly TokenRecord[]> {
    const rows = await this.ctx.db
      .selectFrom('tokens')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('budget', 'is not', null)
      .orderBy('created_at')
      .limit(1000)
      .execute();
    return rows.map(toToken);
  }

  async get(accountId: string, tokenId: string): Promise<TokenRecord | undefined> {
    return findToken(this.ctx.db, accountId, tokenId);
  }

  async list(
    accountId: string,
    filter: { status?: TokenStatus | undefined; now: string },
    page: PageQuery,
  ): Promise<Page<TokenRecord>> {
    const { now } = filter;
    let query = this.ctx.db.selectFrom('tokens').selectAll().where('account_id', '=', accountId);
    switch (filter.status) {
      case 'active':
        query = query
          .where('status', '=', 'active')
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
        break;
      case 'expired':
        query = query.where((eb) =>
          eb.or([
            eb('status', '=', 'expired'),
            eb.and([eb('status', '=', 'active'), eb('expires_at', '<=', now)]),
          ]),
        );
        break;
      case 'revoked':
        query = query.where('status', '=', 'revoked');
        break;
      case undefined:
        break;
    }
    return newestFirstPage(query, page, toToken);
  }

  async revoke(
    accountId: string,
    tokenId: string,
    at: string,
    emit?: TokenEventBuilder,
  ): Promise<TokenRevocation | undefined> {
    return transact(this.ctx.db, async (trx) => {
      // One conditional UPDATE: of two concurrent revocations exactly one sees `changed`, so exactly
      // one commits the event.
      const row = await trx
        .updateTable('tokens')
        .set({ status: 'revoked', revoked_at: at })
        .where('account_id', '=', accountId)
        .where('id', '=', tokenId)
        .where('status', '<>', 'revoked')
        .returningAll()
        .executeTakeFirst();
      if (row !== undefined) {
        const token = toToken(row);
        if (emit !== undefined) await insertEvents(trx, [emit(token)]);
        return { token, changed: true };
      }
      const token = await findToken(trx, accountId, tokenId);
      return token === undefined ? undefined : { token, changed: false };
    });
  }

  async anyDue(now: string): Promise<boolean> {
    return (await dueForExpiry(this.ctx.db, now, 1).executeTakeFirst()) !== undefined;
  }

  async expireDue(now: string, limit: number, emit: TokenEventBuilder): Promise<readonly TokenRecord[]> {
    return transact(this.ctx.db, async (trx) => {
      const due = await this.ctx.dialect.forUpdateSkipLocked(dueForExpiry(trx, now, limit)).execute();
      if (due.length === 0) return [];
      // Still conditional on `active`: a token revoked meanwhile keeps its revocation.
      const rows = await trx
        .updateTable('tokens')
        .set({ status: 'expired' })
        .where(
          'id',
          'in',
          due.map((row) => row.id),
        )
        .where('status', '=', 'active')
        .returningAll()
        .execute();
      const tokens = rows.map(toToken);
      await insertEvents(trx, tokens.map(emit));
      return tokens;
    });
  }

  async update(
    accountId: string,
    tokenId: string,
    patch: TokenPatch,
    at: string,
  ): Promise<TokenRecord | undefined> {
    const set: Updateable<TokensTable> = {};
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.authorizedOrigins !== undefined)
      set.authorized_origins = JSON.stringify(patch.authorizedOrigins);
    if (patch.authorizedIps !== undefined) set.authorized_ips = JSON.stringify(patch.authorizedIps);
    if (patch.rateLimit !== undefined) set.rate_limit = rateLimitText(patch.rateLimit);
    if (patch.expiresAt !== undefined) set.expires_at = patch.expiresAt;
    if (patch.budget !== undefined) set.budget = budgetText(patch.budget);
    if (Object.keys(set).length === 0) return findToken(this.ctx.db, accountId, tokenId);
    let update = this.ctx.db
      .updateTable('tokens')
      .set(set)
      .where('account_id', '=', accountId)
      .where('id', '=', tokenId);
    if (patch.expiresAt !== undefined) {
      // In the UPDATE itself, as the sweep's `expireDue` is: whichever runs first, the other finds
      // nothing to change.
      update = update
        .where('status', '=', 'active')
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', at)]));
    }
    const row = await update.returningAll().executeTakeFirst();
    if (row !== undefined) return toToken(row);
    if (patch.expiresAt !== undefined && (await findToken(this.ctx.db, accountId, tokenId)) !== undefined)
      throw new StoreConflictError('token_not_active');
    return undefined;
  }

  async revokeAll(accountId: string, at: string, emit?: TokenEventBuilder): Promise<readonly TokenRecord[]> {
    return transact(this.ctx.db, async (trx) => {
      // One conditional UPDATE, like revoke: a token revoked concurrently is not announced twice.
      const rows = await trx
        .updateTable('tokens')
        .set({ status: 'revoked', revoked_at: at })
        .where('account_id', '=', accountId)
        .where('status', '=', 'active')
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', at)]))
        .returningAll()
        .execute();
      const tokens = rows.map(toToken);
      if (emit !== undefined && tokens.length > 0) await insertEvents(trx, tokens.map(emit));
      return tokens;
    });
  }

  async findByDigest(digest: string): Promise<TokenWithKey | undefined> {
    const row = await this.ctx.db
      .selectFrom('tokens')
      .innerJoin('provider_keys', 'provider_keys.id', 'tokens.key_id')
      .selectAll('tokens')
      .select('provider_keys.ciphertext')
      .where('tokens.digest', '=', digest)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    const { ciphertext, ...token } = row;
    return { token: toToken(token), ciphertext };
  }

  async recordUsage(batch: readonly TokenUsage[]): Promise<void> {
    const entries = batch.filter((entry) => entry.count > 0);
    if (entries.length === 0) return;
    const usage = new Map<string, { accountId: string; period: string; count: number }>();
    for (const entry of entries) {
      const { period } = usagePeriod(new Date(entry.lastUsedAt));
      const key = `${entry.accountId} ${period}`;
      const row = usage.get(key);
      if (row === undefined) usage.set(key, { accountId: entry.accountId, period, count: entry.count });
      else row.count += entry.count;
    }
    // Rows are touched in one global order, so two processes recording overlapping batches on
    // PostgreSQL wait for each other instead of deadlocking.
    const tokens = [...entries].sort((a, b) => compareText(a.tokenId, b.tokenId));
    const periods = [...usage.values()].sort(
      (a, b) => compareText(a.accountId, b.accountId) || compareText(a.period, b.period),
    );
    await transact(this.ctx.db, async (trx) => {
      for (const entry of tokens) {
        await trx
          .updateTable('tokens')
          .set((eb) => ({
            request_count: eb('request_count', '+', entry.count),
            last_used_at: eb
              .case()
              .when(eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', entry.lastUsedAt)]))
              .then(entry.lastUsedAt)
              .else(eb.ref('last_used_at'))
              .end(),
          }))
          .where('id', '=', entry.tokenId)
          .where('account_id', '=', entry.accountId)
          .execute();
      }
      // An account deleted (`tokenproxy accounts delete`) while its requests were counted has no
      // usage to keep, and its row would fail the foreign key, and with it the other accounts' usage.
      const accountIds = [...new Set(periods.map((row) => row.accountId))];
      const live = new Set(
        (await trx.selectFrom('accounts').select('id').where('id', 'in', accountIds).execute()).map(
          (row) => row.id,
        ),
      );
      for (const row of periods) {
        if (!live.has(row.accountId)) continue;
        await trx
          .insertInto('usage')
          .values({ account_id: row.accountId, period: row.period, requests: row.count })
          .onConflict((oc) =>
            oc
              .columns(['account_id', 'period'])
              .doUpdateSet({ requests: sql<number>`usage.requests + excluded.requests` }),
          )
          .execute();
      }
    });
  }
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

async function findToken(
  db: Kysely<Database>,
  accountId: string,
  tokenId: string,
): Promise<TokenRecord | undefined> {
  const row = await db
    .selectFrom('tokens')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', tokenId)
    .executeTakeFirst();
  return row === undefined ? undefined : toToken(row);
}
