import type { Kysely } from 'kysely';

/**
 * Issue 19, usage and budgets:
 * - request-log records gain the model and the token usage the provider reported, and its cost in
 *   micro-USD (all nullable with no default: adding them rewrites no existing row; older rows read
 *   back as null, "unknown");
 * - tokens and accounts gain a `budget` (JSON `{"amount_usd"|"tokens", "period"}` or null);
 * - `usage_model_rollups`: per hour, token and model, the requests, tokens and cost, kept as the
 *   request log is written. A table beside `usage_rollups` (0009) rather than more key columns in it:
 *   SQLite cannot change a primary key in place, and the Overview's counts by outcome stay as small.
 *   `model` is '' when unknown, since a primary-key column cannot be null.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('request_logs').addColumn('model', 'text').execute();
  await db.schema.alterTable('request_logs').addColumn('input_tokens', 'bigint').execute();
  await db.schema.alterTable('request_logs').addColumn('output_tokens', 'bigint').execute();
  await db.schema.alterTable('request_logs').addColumn('cost_micros', 'bigint').execute();
  await db.schema.alterTable('tokens').addColumn('budget', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('budget', 'text').execute();
  await db.schema
    .createTable('usage_model_rollups')
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('hour', 'text', (col) => col.notNull())
    .addColumn('token_id', 'text', (col) => col.notNull())
    .addColumn('model', 'text', (col) => col.notNull())
    .addColumn('requests', 'bigint', (col) => col.notNull())
    .addColumn('input_tokens', 'bigint', (col) => col.notNull())
    .addColumn('output_tokens', 'bigint', (col) => col.notNull())
    .addColumn('cost_micros', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('usage_model_rollups_pk', ['account_id', 'hour', 'token_id', 'model'])
    .execute();
  // Seeding a budget sums one token's rows of a period.
  await db.schema
    .createIndex('usage_model_rollups_token')
    .on('usage_model_rollups')
    .columns(['token_id', 'hour'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('usage_model_rollups').execute();
  await db.schema.alterTable('accounts').dropColumn('budget').execute();
  await db.schema.alterTable('tokens').dropColumn('budget').execute();
  for (const column of ['cost_micros', 'output_tokens', 'input_tokens', 'model']) {
    await db.schema.alterTable('request_logs').dropColumn(column).execute();
  }
}
