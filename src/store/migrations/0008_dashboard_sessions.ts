import type { Kysely } from 'kysely';

/**
 * Dashboard sign-in sessions (DESIGN §12). The cookie value is never stored: only its SHA-256
 * digest, so a copy of the database cannot be used to sign in. `idle_expires_at` moves forward as
 * the session is used (12 h idle); `expires_at` is fixed at creation (7 days).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('dashboard_sessions')
    .addColumn('digest', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id'))
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('last_seen_at', 'text', (col) => col.notNull())
    .addColumn('idle_expires_at', 'text', (col) => col.notNull())
    .addColumn('expires_at', 'text', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('dashboard_sessions_expires_idx')
    .on('dashboard_sessions')
    .column('expires_at')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('dashboard_sessions').execute();
}
