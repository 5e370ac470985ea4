import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { secretDigest } from '../../src/ids/formats.js';
import { migrationProvider } from '../../src/store/migrations/index.js';
import { openStoreWithoutMigrating } from '../../src/store/open.js';
import { databases } from '../support/databases.js';
import { storeDb } from '../support/store-internals.js';

const OLD_KEY = `svc_sk_${'A'.repeat(43)}`;
const REVOKED_KEY = `svc_sk_${'B'.repeat(43)}`;

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`migration 0012 on a store made before it (${fixture.name})`, () => {
    it("keeps every existing API key working as the full key named 'default', each with its own id", async () => {
      const fresh = await fixture.create({ migrate: false });
      const store = await openStoreWithoutMigrating({ database: fresh.database, dataDir: fresh.dataDir });
      try {
        // The store's own connection, to build the schema as it was.
        const db = storeDb(store);
        const migrator = new Migrator({ db, provider: migrationProvider(store.dialect) });
        const before = await migrator.migrateTo('0011_kek_mac_keys');
        expect(before.error).toBeUndefined();
        const at = '2026-01-01T00:00:00.000Z';
        await sql`insert into accounts (id, name, plan, alert_email, created_at)
                  values ('acct_old', 'old', 'free', null, ${at})`.execute(db);
        await sql`insert into api_keys (digest, account_id, start, created_at, revoked_at)
                  values (${secretDigest(OLD_KEY)}, 'acct_old', 'svc_sk_AAAA', ${at}, null),
                         (${secretDigest(REVOKED_KEY)}, 'acct_old', 'svc_sk_BBBB', ${at}, ${at})`.execute(db);

        // 0012 runs first on the rows made before it (later migrations follow).
        expect((await store.migrateToLatest())[0]).toBe('0012_api_keys_audit');
        const found = await store.apiKeys.findLive(secretDigest(OLD_KEY));
        expect(found?.account).toMatchObject({ id: 'acct_old', plan: 'free' });
        expect(found?.key).toMatchObject({ name: 'default', scope: 'full', start: 'svc_sk_AAAA' });
        expect(found?.key.id).toMatch(/^ak_[1-9A-HJ-NP-Za-km-z]{22}$/);
        expect(await store.apiKeys.findLive(secretDigest(REVOKED_KEY))).toBeUndefined();
        const ids = await sql<{ id: string }>`select id from api_keys`.execute(db);
        expect(new Set(ids.rows.map((r) => r.id)).size).toBe(2);
        expect((await store.apiKeys.list('acct_old', { limit: 10 })).items).toHaveLength(1);
        expect((await store.audit.list('acct_old', {}, { limit: 10 })).items).toEqual([]);
      } finally {
        await store.close();
        await fresh.cleanup();
      }
    });
  });
}
