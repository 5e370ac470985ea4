import { describe, expect, it } from 'vitest';
import { KyselyStore } from '../../src/store/kysely-store.js';
import { databases } from '../support/databases.js';
import { storeInternals } from '../support/store-internals.js';
import { at, createToken, keyInput, newAccount, sqliteFilesContain } from './helpers.js';
import { opened, store, useDatabase } from './store-suite.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`Store.transaction on ${fixture.name}`, () => {
    useDatabase(fixture);

    it('commits every repo call of the work together, or none of them', async () => {
      const { account } = await newAccount(store);
      const input = keyInput(account.id);
      await expect(
        store.transaction(async (tx) => {
          await tx.keys.create(input);
          // A repo method with a transaction of its own joins this one.
          await createToken(tx, account.id, { keyId: input.id });
          throw new Error('the work failed');
        }),
      ).rejects.toThrow('the work failed');
      expect(await store.keys.get(account.id, input.id, at(0))).toBeUndefined();
      expect((await store.tokens.list(account.id, { now: at(0) }, { limit: 10 })).items).toEqual([]);

      const token = await store.transaction(async (tx) => {
        await tx.keys.create(input);
        return createToken(tx, account.id, { keyId: input.id });
      });
      expect((await store.tokens.get(account.id, token.id))?.keyId).toBe(input.id);
    });

    it('a key deleted inside it is purged from the files once it commits, not before', async () => {
      const { account } = await newAccount(store);
      const input = keyInput(account.id);
      await store.keys.create(input);
      if (fixture.name === 'sqlite') expect(await sqliteFilesContain(opened, input.ciphertext)).toBe(true);
      await store.transaction(async (tx) => {
        expect((await tx.keys.delete(account.id, input.id, at(10)))?.key.deletedAt).toBe(at(10));
      });
      expect((await store.keys.get(account.id, input.id, at(11)))?.ciphertext).toBeNull();
      if (fixture.name === 'sqlite') expect(await sqliteFilesContain(opened, input.ciphertext)).toBe(false);
    });

    it('a purge that fails after the commit is reported; the committed change stands and is returned', async () => {
      const { db, support } = storeInternals(store);
      const warnings: [string, unknown][] = [];
      const failing = new KyselyStore(
        db,
        { ...support, purgeDestroyedSecrets: () => Promise.reject(new Error('purge failed')) },
        (message, error) => warnings.push([message, error]),
      );
      const { account } = await newAccount(store);
      const input = keyInput(account.id);
      await store.keys.create(input);
      const deleted = await failing.transaction((tx) => tx.keys.delete(account.id, input.id, at(10)));
      expect(deleted?.key.deletedAt).toBe(at(10));
      expect((await store.keys.get(account.id, input.id, at(11)))?.deletedAt).toBe(at(10));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.[0]).toContain('destroyed secrets stay in the database files until the next purge');
      expect(String(warnings[0]?.[1])).toContain('purge failed');
      // Outside a transaction the purge is part of the call, as before: its failure is the call's.
      const again = keyInput(account.id);
      await store.keys.create(again);
      await expect(failing.keys.delete(account.id, again.id, at(12))).rejects.toThrow('purge failed');
    });
  });
}
