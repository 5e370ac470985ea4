import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../dialect.js';

/**
 * KEK bookkeeping (DESIGN §8): which key-encryption key wrapped each data key, so a start can prove
 * it holds the right KEK before it writes anything, and `kek rotate` can find what is left to rewrap.
 *
 * `kek_versions` has one row per KEK version: its non-secret id (the 8-byte fingerprint every
 * envelope carries, as hex), the provider that holds it, and a canary: a vault envelope of a known
 * plaintext sealed under that KEK. Opening the canary proves a KEK, where a matching fingerprint only
 * suggests it. `retired_at` is set once `kek rotate` has moved every envelope off the version.
 *
 * Every table holding envelopes gains `kek_id`, filled here from the envelopes themselves (bytes
 * 1–8 of a version-1 envelope are the fingerprint), so stores made before this migration are counted.
 */
const ENVELOPE_TABLES = [
  { table: 'provider_keys', column: 'ciphertext' },
  { table: 'webhooks', column: 'secret' },
  { table: 'idempotency_keys', column: 'response_body' },
] as const;

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const bytes = dialect === 'postgres' ? 'bytea' : 'blob';
  await db.schema
    .createTable('kek_versions')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('provider', 'text', (col) => col.notNull())
    .addColumn('label', 'text')
    .addColumn('canary', bytes, (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('retired_at', 'text')
    .execute();
  for (const { table, column } of ENVELOPE_TABLES) {
    await db.schema.alterTable(table).addColumn('kek_id', 'text').execute();
    const fingerprint =
      dialect === 'postgres'
        ? sql`encode(substring(${sql.ref(column)} from 2 for 8), 'hex')`
        : sql`lower(hex(substr(${sql.ref(column)}, 2, 8)))`;
    await sql`update ${sql.table(table)} set kek_id = ${fingerprint} where ${sql.ref(column)} is not null`.execute(
      db,
    );
    await db.schema.createIndex(`${table}_kek_idx`).on(table).column('kek_id').execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const { table } of ENVELOPE_TABLES) {
    await db.schema.dropIndex(`${table}_kek_idx`).execute();
    await db.schema.alterTable(table).dropColumn('kek_id').execute();
  }
  await db.schema.dropTable('kek_versions').execute();
}
