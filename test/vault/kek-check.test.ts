import { randomBytes } from 'node:crypto';
import { Migrator, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openStoreWithoutMigrating } from '../../src/store/open.js';
import { migrationProvider } from '../../src/store/migrations/index.js';
import type { Store } from '../../src/store/store.js';
import { verifyKek, type KekSource } from '../../src/vault/kek-check.js';
import { KekChangedError, KekError } from '../../src/vault/kek-error.js';
import { createLocalVault } from '../../src/vault/local-kek.js';
import type { Vault } from '../../src/vault/vault.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { storeDb } from '../support/store-internals.js';
import { keyInput, newAccount, T0 } from '../store/helpers.js';

const SOURCE: KekSource = {
  setting: 'TOKENPROXY_MASTER_KEY',
  fix: 'Use the right key.',
  provider: 'local',
  label: null,
};

function vaultOf(byte: number): Vault {
  return createLocalVault(Buffer.alloc(32, byte));
}

async function addKeyUnder(store: Store, vault: Vault): Promise<{ id: string; accountId: string }> {
  const { account } = await newAccount(store);
  const input = keyInput(account.id);
  await store.keys.create({
    ...input,
    ciphertext: await vault.encrypt(Buffer.from('sk-real'), { keyId: input.id, accountId: account.id }),
  });
  return { id: input.id, accountId: account.id };
}

async function snapshot(store: Store): Promise<string> {
  const db = storeDb(store);
  const keks = await db.selectFrom('kek_versions').selectAll().orderBy('id').execute();
  const keys = await db.selectFrom('provider_keys').selectAll().orderBy('id').execute();
  return JSON.stringify({ keks, keys }, (_k, v: unknown) =>
    v !== null && typeof v === 'object' && 'type' in v && v.type === 'Buffer' ? JSON.stringify(v) : v,
  );
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`KEK verification at start (${fixture.name})`, () => {
    let opened: OpenedDatabase | undefined;
    afterEach(async () => {
      await opened?.cleanup();
      opened = undefined;
    });

    it('records the first KEK with a canary, then accepts it and refuses any other, writing nothing', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const right = vaultOf(1);
      await verifyKek(store, right, SOURCE, { now: () => new Date(T0) });
      const versions = await store.keks.list();
      expect(versions.map((v) => [v.id, v.provider, v.retiredAt])).toEqual([[right.kekId, 'local', null]]);
      await addKeyUnder(store, right);
      await verifyKek(store, right, SOURCE);

      const before = await snapshot(store);
      const wrong = vaultOf(2);
      const refused = await verifyKek(store, wrong, SOURCE).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(KekError);
      expect((refused as KekError).setting).toBe('TOKENPROXY_MASTER_KEY');
      expect((refused as Error).message).toContain('KEK mismatch: TOKENPROXY_MASTER_KEY');
      expect((refused as Error).message).toContain(right.kekId);
      expect(await snapshot(store)).toBe(before);
    });

    it('records each key envelope’s KEK id, and clears it when the key is deleted', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const vault = vaultOf(1);
      const key = await addKeyUnder(store, vault);
      expect(await store.keks.envelopeCounts()).toEqual(new Map([[vault.kekId, 1]]));
      await store.keys.delete(key.accountId, key.id, T0);
      expect(await store.keks.envelopeCounts()).toEqual(new Map());
    });

    it('refuses a KEK that carries the recorded id but does not open the canary', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const right = vaultOf(1);
      await verifyKek(store, right, SOURCE);
      await storeDb(store)
        .updateTable('kek_versions')
        .set({ canary: randomBytes(120) })
        .execute();
      await expect(verifyKek(store, right, SOURCE)).rejects.toThrow(/does not open that KEK's record/);
    });

    it('refuses a KEK version that was retired', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const old = vaultOf(1);
      await verifyKek(store, old, SOURCE);
      await store.keks.retire(old.kekId, T0);
      await expect(verifyKek(store, old, SOURCE)).rejects.toThrow(/retired/);
    });

    it('of two first starts with different KEKs, exactly one records its KEK', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const results = await Promise.allSettled([
        verifyKek(store, vaultOf(1), SOURCE),
        verifyKek(store, vaultOf(2), SOURCE),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(
        KekError,
      );
      expect(await store.keks.list()).toHaveLength(1);
    });

    it('KEKs recorded by other processes twice over while starting: KekChangedError (start again), not a bad setting', async () => {
      opened = await fixture.create();
      const { store } = opened;
      // Every recording loses to "another process", whose KEK this start never sees.
      const keks = new Proxy(store.keks, {
        get: (target, name) =>
          name === 'add' ? () => Promise.resolve(false) : (Reflect.get(target, name) as unknown),
      });
      const racing = new Proxy(store, {
        get: (target, name) => (name === 'keks' ? keks : (Reflect.get(target, name) as unknown)),
      });
      const refused = await verifyKek(racing, vaultOf(1), SOURCE).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(KekChangedError);
      expect(refused).not.toBeInstanceOf(KekError);
      expect(refused).toMatchObject({ code: 'kek_changed_meanwhile' });
      expect((refused as Error).message).toMatch(/start again$/);
    });

    it('a store made before KEK versions were recorded: filled from the envelopes, proven before recording', async () => {
      opened = await fixture.create({ migrate: false });
      const db = storeDb(opened.store);
      const migrator = new Migrator({ db, provider: migrationProvider(fixture.name) });
      const to0005 = await migrator.migrateTo('0005_token_expiry_index');
      expect(to0005.error).toBeUndefined();
      const right = vaultOf(1);
      // Rows as the previous release wrote them (no kek_id column yet).
      const accountId = 'acct_old';
      await db
        .insertInto('accounts')
        .values({ id: accountId, name: 'old', plan: 'free', alert_email: null, created_at: T0 })
        .execute();
      const keyId = 'key_old';
      const ciphertext = await right.encrypt(Buffer.from('sk-old'), { keyId, accountId });
      await (db as unknown as Kysely<Record<string, Record<string, unknown>>>)
        .insertInto('provider_keys')
        .values({
          id: keyId,
          account_id: accountId,
          name: 'old',
          provider: 'openai',
          hint: 'x',
          ciphertext,
          created_at: T0,
          rotated_at: null,
          deleted_at: null,
        })
        .execute();
      const store = await openStoreWithoutMigrating({ database: opened.database, dataDir: opened.dataDir });
      try {
        await store.migrateToLatest();
        expect(await store.keks.envelopeCounts()).toEqual(new Map([[right.kekId, 1]]));

        const before = await snapshot(store);
        await expect(verifyKek(store, vaultOf(2), SOURCE)).rejects.toThrow(KekError);
        expect(await snapshot(store)).toBe(before);

        // A KEK claiming the right id but unable to open the data is refused too.
        const impostor: Vault = { ...vaultOf(3), kekId: right.kekId };
        await expect(verifyKek(store, impostor, SOURCE)).rejects.toThrow(
          /does not open the stored provider_keys key_old/,
        );
        expect(await snapshot(store)).toBe(before);

        await verifyKek(store, right, SOURCE);
        expect((await store.keks.list()).map((v) => v.id)).toEqual([right.kekId]);
      } finally {
        await store.close();
      }
    });
  });
}
