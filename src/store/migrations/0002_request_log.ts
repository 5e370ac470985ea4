import type { Kysely } from 'kysely';

/**
 * Request log and anomaly log. Both are append-only and written in batches off the proxy's hot path,
 * so they carry no foreign keys (each would cost a lookup per inserted row) and `authorized` is an
 * integer 0/1 in both dialects, read back the same way. Lists run newest first per account, which the
 * (account_id, timestamp, id) indexes serve in either direction.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('request_logs')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text')
    .addColumn('token_id', 'text')
    .addColumn('provider', 'text')
    .addColumn('timestamp', 'text', (col) => col.notNull())
    .addColumn('origin', 'text')
    .addColumn('ip', 'text', (col) => col.notNull())
    .addColumn('country', 'text')
    .addColumn('pop', 'text', (col) => col.notNull())
    .addColumn('path', 'text', (col) => col.notNull())
    .addColumn('status', 'integer', (col) => col.notNull())
    .addColumn('authorized', 'integer', (col) => col.notNull())
    .addColumn('latency_ms', 'integer', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('request_logs_account_time_idx')
    .on('request_logs')
    .columns(['account_id', 'timestamp', 'id'])
    .execute();
  await db.schema
    .createIndex('request_logs_account_token_time_idx')
    .on('request_logs')
    .columns(['account_id', 'token_id', 'timestamp', 'id'])
    .execute();

  await db.schema
    .createTable('anomalies')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('token_id', 'text', (col) => col.notNull())
    .addColumn('timestamp', 'text', (col) => col.notNull())
    .addColumn('origin', 'text')
    .addColumn('ip', 'text', (col) => col.notNull())
    .addColumn('country', 'text')
    .addColumn('path', 'text', (col) => col.notNull())
    .addColumn('reason', 'text', (col) => col.notNull())
    .addColumn('kind', 'text', (col) => col.notNull().defaultTo('breach'))
    .addColumn('details', 'text')
    .execute();
  await db.schema
    .createIndex('anomalies_account_time_idx')
    .on('anomalies')
    .columns(['account_id', 'timestamp', 'id'])
    .execute();
  await db.schema
    .createIndex('anomalies_account_token_time_idx')
    .on('anomalies')
    .columns(['account_id', 'token_id', 'timestamp', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['anomalies', 'request_logs']) {
    await db.schema.dropTable(table).execute();
  }
}
