import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { StoreTooNewError } from '../../src/store/errors.js';
import { migrationProvider } from '../../src/store/migrations/index.js';
import { openStoreWithoutMigrating } from '../../src/store/open.js';
import { databases } from '../support/databases.js';
import { storeDb } from '../support/store-internals.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`store on ${fixture.name}`, () => {
    it('applies migrations once', async () => {
      const fresh = await fixture.create({ migrate: false });
      try {
        const first = await openStoreWithoutMigrating({ database: fresh.database, dataDir: fresh.dataDir });
        expect(await first.migrateToLatest()).toEqual([
          '0001_initial',
          '0002_request_log',
          '0003_events',
          '0004_idempotency',
          '0005_token_expiry_index',
          '0006_request_log_error_code',
          '0007_kek_versions',
          '0008_dashboard_sessions',
          '0009_usage_rollups',
          '0010_job_leases',
          '0011_kek_mac_keys',
          '0012_api_keys_audit',
          '0013_retention_and_lookups',
          '0014_usage_budgets',
          '0015_session_api_key',
        ]);
        expect(await first.migrateToLatest()).toEqual([]);
        await first.close();
        const second = await openStoreWithoutMigrating({ database: fresh.database, dataDir: fresh.dataDir });
        expect(await second.migrateToLatest()).toEqual([]);
        await second.ping();
        await second.close();
      } finally {
        await fresh.cleanup();
      }
    });

    it('applies a migration missing from the middle: branches merged out of name order', async () => {
      const fresh = await fixture.create({ migrate: false });
      try {
        const store = await openStoreWithoutMigrating({ database: fresh.database, dataDir: fresh.dataDir });
        try {
          // What a build of main between the merges of 0012–0014 and of 0011 applied (515a50d): the
          // test/fixtures/upgrade stores made by it show the whole server on such a store.
          const all = await migrationProvider(store.dialect).getMigrations();
          const asAt515a50d = Object.fromEntries(
            Object.entries(all).filter(([name]) => name < '0015' && name !== '0011_kek_mac_keys'),
          );
          const old = new Migrator({
            db: storeDb(store),
            provider: { getMigrations: () => Promise.resolve(asAt515a50d) },
          });
          expect((await old.migrateToLatest()).error).toBeUndefined();
          expect(await store.migrateToLatest()).toEqual(['0011_kek_mac_keys', '0015_session_api_key']);
          expect(await store.migrateToLatest()).toEqual([]);
        } finally {
          await store.close();
        }
      } finally {
        await fresh.cleanup();
      }
    });

    it('a store a newer tokenproxy upgraded is refused with what to do, not as "corrupted"', async () => {
      const fresh = await fixture.create({ migrate: false });
      try {
        const store = await openStoreWithoutMigrating({ database: fresh.database, dataDir: fresh.dataDir });
        try {
          await store.migrateToLatest();
          // What a later release's first migration leaves in the table.
          await sql`insert into kysely_migration (name, timestamp) values ('0099_from_the_future', '2030-01-01T00:00:00.000Z')`.execute(
            storeDb(store),
          );
          await expect(store.migrateToLatest()).rejects.toThrow(
            'the store was upgraded by a newer tokenproxy (its migration 0099_from_the_future is unknown to this version): run that version (or newer), or restore the backup made before the upgrade',
          );
          const refused = await store.migrateToLatest().catch((err: unknown) => err);
          expect(refused).toBeInstanceOf(StoreTooNewError);
          expect(refused).toMatchObject({ code: 'store_too_new', migration: '0099_from_the_future' });
        } finally {
          await store.close();
        }
      } finally {
        await fresh.cleanup();
      }
    });
  });
}
