import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.js';

/**
 * The keys of the vault's MACs (the idempotency request fingerprints) outlive a KEK rotation
 * (docs/decisions.md): a version made by `kek rotate` or `kek migrate` records the keys it
 * inherited, sealed under itself. Null for a store's first version, whose MAC keys are derived from
 * its KEK as before.
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  await db.schema
    .alterTable('kek_versions')
    .addColumn('mac_keys', dialect === 'postgres' ? 'bytea' : 'blob')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('kek_versions').dropColumn('mac_keys').execute();
}
