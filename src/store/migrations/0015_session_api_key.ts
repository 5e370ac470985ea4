import type { Kysely } from 'kysely';

/**
 * A dashboard session remembers the API key it was opened with, and lives only as long as that key:
 * deleting or rotating a leaked key must also end the sessions its holder opened, in every process.
 * Sessions opened before this migration name no key and cannot be tied to one, so they are ended
 * here: their users sign in again once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('dashboard_sessions').addColumn('api_key_id', 'text').execute();
  await db.deleteFrom('dashboard_sessions' as never).execute();
}
