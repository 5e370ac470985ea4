import type { Kysely } from 'kysely';

/**
 * `error_code` on request-log records (DESIGN §13): the proxy's own code when it answered itself,
 * null when the request was forwarded. Nullable with no default, so adding it rewrites no existing
 * row in either dialect (older rows read back as null).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('request_logs').addColumn('error_code', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('request_logs').dropColumn('error_code').execute();
}
