import type { Kysely } from 'kysely';

/**
 * Leases of cluster-wide jobs (src/cluster/job-lock.ts): one row per job name, naming the process
 * that runs it and until when. A holder that dies leaves its row behind; it is taken over once
 * `lease_until` (ISO 8601 UTC, compared as text like every other timestamp here) has passed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('job_leases')
    .addColumn('name', 'text', (col) => col.primaryKey())
    .addColumn('holder', 'text', (col) => col.notNull())
    .addColumn('lease_until', 'text', (col) => col.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('job_leases').execute();
}
