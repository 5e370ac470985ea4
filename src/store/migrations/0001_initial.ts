import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.js';

/** Accounts, their API keys, provider keys, tokens and monthly usage. */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const bytes = dialect === 'postgres' ? 'bytea' : 'blob';

  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('plan', 'text', (col) => col.notNull())
    .addColumn('alert_email', 'text')
    .addColumn('created_at', 'text', (col) => col.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('digest', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id'))
    .addColumn('start', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('api_keys_account_idx').on('api_keys').column('account_id').execute();

  await db.schema
    .createTable('provider_keys')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('provider', 'text', (col) => col.notNull())
    .addColumn('hint', 'text', (col) => col.notNull())
    .addColumn('ciphertext', bytes)
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('rotated_at', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('provider_keys_account_created_idx')
    .on('provider_keys')
    .columns(['account_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('tokens')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('provider', 'text', (col) => col.notNull())
    .addColumn('key_id', 'text', (col) => col.notNull().references('provider_keys.id'))
    .addColumn('digest', 'text', (col) => col.notNull().unique())
    .addColumn('hint', 'text', (col) => col.notNull())
    .addColumn('authorized_origins', 'text', (col) => col.notNull())
    .addColumn('authorized_ips', 'text', (col) => col.notNull())
    .addColumn('rate_limit', 'text')
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('expires_at', 'text')
    .addColumn('revoked_at', 'text')
    .addColumn('request_count', 'bigint', (col) => col.notNull().defaultTo(0))
    .addCheckConstraint('tokens_status_check', sql`status in ('active', 'revoked', 'expired')`)
    .execute();
  await db.schema
    .createIndex('tokens_account_created_idx')
    .on('tokens')
    .columns(['account_id', 'created_at', 'id'])
    .execute();
  await db.schema.createIndex('tokens_key_idx').on('tokens').column('key_id').execute();

  await db.schema
    .createTable('usage')
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id'))
    .addColumn('period', 'text', (col) => col.notNull())
    .addColumn('requests', 'bigint', (col) => col.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('usage_pk', ['account_id', 'period'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['usage', 'tokens', 'provider_keys', 'api_keys', 'accounts']) {
    await db.schema.dropTable(table).execute();
  }
}
