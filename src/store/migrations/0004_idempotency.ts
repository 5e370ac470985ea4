import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.js';

/**
 * Idempotency keys of the management API (POST routes): one row per (account, key) for 24 hours.
 * `response_status` is null while the first request is in flight. `response_body` is a vault
 * envelope: a token creation's response carries the sanitized token, which must never sit in the
 * database in the clear (docs/decisions.md, "Idempotency-Key").
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const bytes = dialect === 'postgres' ? 'bytea' : 'blob';
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('idempotency_key', 'text', (col) => col.notNull())
    .addColumn('fingerprint', 'text', (col) => col.notNull())
    .addColumn('started_at', 'text', (col) => col.notNull())
    .addColumn('expires_at', 'text', (col) => col.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', bytes)
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'idempotency_key'])
    .execute();
  await db.schema
    .createIndex('idempotency_keys_expires_idx')
    .on('idempotency_keys')
    .column('expires_at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
