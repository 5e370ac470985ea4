import type { Selectable } from 'kysely';
import type { ApiKeyRecord, ApiKeyRepo, ApiKeyScope, NewApiKey, LiveApiKey } from '../access-records.js';
import type { Page, PageQuery } from '../records.js';
import type { ApiKeysTable } from '../schema.js';
import type { RepoContext } from './context.js';
import { newestFirstPage, toAccount } from './rows.js';
import { transact } from './transact.js';

const COLUMNS = ['id', 'account_id', 'name', 'scope', 'start', 'created_at', 'revoked_at'] as const;
type ApiKeyRow = Pick<Selectable<ApiKeysTable>, (typeof COLUMNS)[number]>;

export class KyselyApiKeyRepo implements ApiKeyRepo {
  constructor(private readonly ctx: RepoContext) {}

  async create(key: NewApiKey): Promise<ApiKeyRecord> {
    await this.ctx.db.insertInto('api_keys').values(toRow(key)).execute();
    return fromNew(key);
  }

  async findLive(digest: string): Promise<LiveApiKey | undefined> {
    const row = await this.ctx.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .selectAll('accounts')
      .select([
        'api_keys.id as key_id',
        'api_keys.name as key_name',
        'api_keys.scope as key_scope',
        'api_keys.start as key_start',
        'api_keys.created_at as key_created_at',
      ])
      .where('api_keys.digest', '=', digest)
      .where('api_keys.revoked_at', 'is', null)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      account: toAccount(row),
      key: toApiKey({
        id: row.key_id,
        account_id: row.id,
        name: row.key_name,
        scope: row.key_scope,
        start: row.key_start,
        created_at: row.key_created_at,
        revoked_at: null,
      }),
    };
  }

  async list(accountId: string, page: PageQuery): Promise<Page<ApiKeyRecord>> {
    const query = this.ctx.db
      .selectFrom('api_keys')
      .select([...COLUMNS])
      .where('account_id', '=', accountId)
      .where('revoked_at', 'is', null);
    return newestFirstPage(query, page, toApiKey);
  }

  async revoke(accountId: string, keyId: string, at: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.ctx.db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('account_id', '=', accountId)
      .where('id', '=', keyId)
      .where('revoked_at', 'is', null)
      .returning([...COLUMNS])
      .executeTakeFirst();
    return row === undefined ? undefined : toApiKey(row);
  }

  async replace(
    newKey: Omit<NewApiKey, 'scope'>,
    at: string,
  ): Promise<{ key: ApiKeyRecord; revoked: readonly ApiKeyRecord[] }> {
    return transact(this.ctx.db, async (trx) => {
      const revoked = await trx
        .updateTable('api_keys')
        .set({ revoked_at: at })
        .where('account_id', '=', newKey.accountId)
        .where('name', '=', newKey.name)
        .where('revoked_at', 'is', null)
        .returning([...COLUMNS])
        .execute();
      const key: NewApiKey = {
        ...newKey,
        scope: revoked.some((k) => k.scope === 'full') || revoked.length === 0 ? 'full' : 'read',
      };
      await trx.insertInto('api_keys').values(toRow(key)).execute();
      return { key: fromNew(key), revoked: revoked.map(toApiKey) };
    });
  }
}

function toRow(key: NewApiKey) {
  return {
    digest: key.digest,
    id: key.id,
    account_id: key.accountId,
    name: key.name,
    scope: key.scope,
    start: key.start,
    created_at: key.createdAt,
    revoked_at: null,
  };
}

function fromNew(key: NewApiKey): ApiKeyRecord {
  return {
    id: key.id,
    accountId: key.accountId,
    name: key.name,
    scope: key.scope,
    start: key.start,
    createdAt: key.createdAt,
    revokedAt: null,
  };
}

function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  if (row.id === null) throw new Error('api_keys row without id: run `tokenproxy migrate`');
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    scope: toScope(row.scope),
    start: row.start,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

function toScope(value: string): ApiKeyScope {
  if (value === 'full' || value === 'read') return value;
  throw new Error(`unexpected stored value in api_keys.scope: ${value}`);
}
