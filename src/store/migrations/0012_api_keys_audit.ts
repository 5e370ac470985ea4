import { sql, type Kysely } from 'kysely';
import { randomBase58 } from '../../ids/base58.js';

/**
 * Named, scoped API keys and the audit log (issue 18).
 *
 * `api_keys` gains an id (`ak_…`, what the API shows and deletes by), a name and a scope (`full` or
 * `read`). Keys that existed before keep working: each becomes the full-scope key named `default`.
 *
 * `audit_log` records every change made through the API, a dashboard session or the CLI: who
 * (`actor_type` plus the API key's id and name), what (`action`), the object's id, when and from
 * which IP. Never a secret and never a request body: there is no column that could hold one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('id', 'text').execute();
  await db.schema
    .alterTable('api_keys')
    .addColumn('name', 'text', (col) => col.notNull().defaultTo('default'))
    .execute();
  await db.schema
    .alterTable('api_keys')
    .addColumn('scope', 'text', (col) => col.notNull().defaultTo('full'))
    .execute();
  const rows = await sql<{ digest: string }>`select digest from api_keys`.execute(db);
  for (const row of rows.rows) {
    await sql`update api_keys set id = ${`ak_${randomBase58(22)}`} where digest = ${row.digest}`.execute(db);
  }
  await db.schema.createIndex('api_keys_id_idx').on('api_keys').column('id').unique().execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('action', 'text', (col) => col.notNull())
    .addColumn('object_id', 'text')
    .addColumn('actor_type', 'text', (col) => col.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('actor_name', 'text', (col) => col.notNull())
    .addColumn('ip', 'text')
    .execute();
  await db.schema
    .createIndex('audit_log_account_idx')
    .on('audit_log')
    .columns(['account_id', 'created_at', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('audit_log').execute();
  await db.schema.dropIndex('api_keys_id_idx').execute();
  for (const column of ['scope', 'name', 'id']) {
    await db.schema.alterTable('api_keys').dropColumn(column).execute();
  }
}
