import { sql, type Kysely } from 'kysely';

/**
 * Issue 18: finding what happened to a request, and to a webhook delivery.
 *
 * - `request_logs_account_ip_idx` serves `GET /v1/logs?ip=`: without it a rare address means reading
 *   the account's whole history newest first. It costs every log insert one more index entry.
 * - `request_logs_account_error_idx` serves `?error_code=`; partial (only refused or failed requests
 *   carry a code), so forwarded traffic pays nothing for it.
 * - `delivery_attempts`: one row per attempt of a webhook delivery (time, status code, duration,
 *   error class), which `GET /v1/webhooks/:id/deliveries` shows. Never a response body.
 *
 * Retention needs no new index: it deletes per account through the (account_id, time) indexes the
 * lists already use.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('request_logs_account_ip_idx')
    .on('request_logs')
    .columns(['account_id', 'ip', 'timestamp', 'id'])
    .execute();
  await db.schema
    .createIndex('request_logs_account_error_idx')
    .on('request_logs')
    .columns(['account_id', 'error_code', 'timestamp', 'id'])
    .where(sql.ref('error_code'), 'is not', null)
    .execute();
  await db.schema
    .createTable('delivery_attempts')
    .addColumn('delivery_id', 'text', (col) => col.notNull())
    .addColumn('attempt', 'integer', (col) => col.notNull())
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('attempted_at', 'text', (col) => col.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('duration_ms', 'integer', (col) => col.notNull())
    .addColumn('error_class', 'text')
    .addPrimaryKeyConstraint('delivery_attempts_pk', ['delivery_id', 'attempt'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('delivery_attempts').execute();
  await db.schema.dropIndex('request_logs_account_error_idx').execute();
  await db.schema.dropIndex('request_logs_account_ip_idx').execute();
}
