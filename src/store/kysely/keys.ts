import type { Kysely } from 'kysely';
import { envelopeKekId } from '../../vault/vault.js';
import { StoreConflictError } from '../errors.js';
import type { Page, PageQuery, ProviderKeyRecord, TokenRecord } from '../records.js';
import type { Database } from '../schema.js';
import type { KeyDeletion, KeyRepo, KeyRotation, NewProviderKey, TokenEventBuilder } from '../store.js';
import type { RepoContext } from './context.js';
import { insertEvents } from './events.js';
import { toPage, toProviderKey, toToken } from './rows.js';
import { transact } from './transact.js';

/**
 * Provider keys with `token_count`: tokens of the key whose stored status is 'active' and, when
 * `now` is given, that have not passed `expires_at` (an expired token is not active, DESIGN §10).
 */
function selectKeys(db: Kysely<Database>, now?: string) {
  return db
    .selectFrom('provider_keys')
    .selectAll('provider_keys')
    .select((eb) =>
      eb
        .selectFrom('tokens')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('tokens.key_id', '=', 'provider_keys.id')
        .where('tokens.status', '=', 'active')
        .$if(now !== undefined, (qb) =>
          qb.where((w) => w.or([w('tokens.expires_at', 'is', null), w('tokens.expires_at', '>', now ?? '')])),
        )
        .as('token_count'),
    );
}

export async function findKey(
  db: Kysely<Database>,
  accountId: string,
  keyId: string,
  now?: string,
): Promise<ProviderKeyRecord | undefined> {
  const row = await selectKeys(db, now)
    .where('provider_keys.account_id', '=', accountId)
    .where('provider_keys.id', '=', keyId)
    .executeTakeFirst();
  return row === undefined ? undefined : toProviderKey(row);
}

/** The key row locked for the rest of the transaction (PostgreSQL), or undefined in another account. */
export async function lockKey(
  ctx: RepoContext,
  trx: Kysely<Database>,
  accountId: string,
  keyId: string,
): Promise<{ provider: string; deleted: boolean } | undefined> {
  const query = trx
    .selectFrom('provider_keys')
    .select(['provider', 'deleted_at'])
    .where('account_id', '=', accountId)
    .where('id', '=', keyId);
  const row = await ctx.dialect.forUpdate(query).executeTakeFirst();
  return row === undefined ? undefined : { provider: row.provider, deleted: row.deleted_at !== null };
}

export async function insertKey(db: Kysely<Database>, key: NewProviderKey): Promise<ProviderKeyRecord> {
  const row = await db
    .insertInto('provider_keys')
    .values({
      id: key.id,
      account_id: key.accountId,
      name: key.name,
      provider: key.provider,
      hint: key.hint,
      ciphertext: key.ciphertext,
      kek_id: envelopeKekId(key.ciphertext),
      created_at: key.createdAt,
      rotated_at: null,
      deleted_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toProviderKey({ ...row, token_count: 0 });
}

export class KyselyKeyRepo implements KeyRepo {
  constructor(private readonly ctx: RepoContext) {}

  create(key: NewProviderKey): Promise<ProviderKeyRecord> {
    return insertKey(this.ctx.db, key);
  }

  get(accountId: string, keyId: string, now?: string): Promise<ProviderKeyRecord | undefined> {
    return findKey(this.ctx.db, accountId, keyId, now);
  }

  async list(accountId: string, page: PageQuery, now?: string): Promise<Page<ProviderKeyRecord>> {
    const { after } = page;
    let query = selectKeys(this.ctx.db, now).where('provider_keys.account_id', '=', accountId);
    if (after !== undefined) {
      query = query.where((eb) =>
        eb(
          eb.refTuple('provider_keys.created_at', 'provider_keys.id'),
          '<',
          eb.tuple(after.createdAt, after.id),
        ),
      );
    }
    const rows = await query
      .orderBy('provider_keys.created_at', 'desc')
      .orderBy('provider_keys.id', 'desc')
      .limit(page.limit + 1)
      .execute();
    return toPage(rows, page.limit, toProviderKey);
  }

  #purge(): Promise<void> {
    return this.ctx.afterCommit((db) => this.ctx.dialect.purgeDestroyedSecrets(db, ['provider_keys']));
  }

  async rotate(
    accountId: string,
    keyId: string,
    rotation: KeyRotation,
  ): Promise<ProviderKeyRecord | undefined> {
    const rotated = await transact(this.ctx.db, async (trx) => {
      const key = await lockKey(this.ctx, trx, accountId, keyId);
      if (key === undefined) return undefined;
      if (key.deleted) throw new StoreConflictError('key_deleted');
      await trx
        .updateTable('provider_keys')
        .set({
          ciphertext: rotation.ciphertext,
          kek_id: envelopeKekId(rotation.ciphertext),
          hint: rotation.hint,
          rotated_at: rotation.rotatedAt,
        })
        .where('account_id', '=', accountId)
        .where('id', '=', keyId)
        .execute();
      return findKey(trx, accountId, keyId, rotation.rotatedAt);
    });
    // The replaced ciphertext is the old real key: it must not outlive the rotation in the files.
    if (rotated !== undefined) await this.#purge();
    return rotated;
  }

  async delete(
    accountId: string,
    keyId: string,
    at: string,
    emit?: TokenEventBuilder,
  ): Promise<KeyDeletion | undefined> {
    const deletion = await transact(this.ctx.db, async (trx) => {
      const key = await lockKey(this.ctx, trx, accountId, keyId);
      if (key === undefined) return undefined;
      let revoked: TokenRecord[] = [];
      if (!key.deleted) {
        await trx
          .updateTable('provider_keys')
          .set({ ciphertext: null, kek_id: null, deleted_at: at })
          .where('account_id', '=', accountId)
          .where('id', '=', keyId)
          .execute();
        const rows = await trx
          .updateTable('tokens')
          .set({ status: 'revoked', revoked_at: at })
          .where('account_id', '=', accountId)
          .where('key_id', '=', keyId)
          .where('status', '<>', 'revoked')
          .returningAll()
          .execute();
        revoked = rows.map(toToken).sort(newestFirst);
        if (emit !== undefined) await insertEvents(trx, revoked.map(emit));
      }
      const record = await findKey(trx, accountId, keyId, at);
      if (record === undefined) throw new Error(`key ${keyId} vanished inside its own transaction`);
      return { key: record, revokedTokens: revoked, destroyed: !key.deleted };
    });
    if (deletion === undefined) return undefined;
    if (deletion.destroyed) await this.#purge();
    return { key: deletion.key, revokedTokens: deletion.revokedTokens };
  }
}

function newestFirst(a: TokenRecord, b: TokenRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}
