import type { Kysely } from 'kysely';

/**
 * Per-hour counts of an account's proxied requests by outcome (`forwarded` or a refusal reason),
 * kept as the request log is written. The dashboard's Overview (GET /v1/usage) reads at most a few
 * hundred of these rows instead of scanning the request log, whatever its size.
 * `hour` is the ISO timestamp of the hour's start (`2026-01-02T03:00:00.000Z`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('usage_rollups')
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('hour', 'text', (col) => col.notNull())
    .addColumn('outcome', 'text', (col) => col.notNull())
    .addColumn('requests', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('usage_rollups_pk', ['account_id', 'hour', 'outcome'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('usage_rollups').execute();
}
