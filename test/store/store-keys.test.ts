import { describe, expect, it } from 'vitest';
import { newId } from '../../src/ids/formats.js';
import { StoreConflictError } from '../../src/store/errors.js';
import type { TokenRecord } from '../../src/store/records.js';
import { databases } from '../support/databases.js';
import {
  allPages,
  at,
  createToken,
  keyInput,
  newAccount,
  rawQuery,
  sqliteFilesContain,
  T0,
} from './helpers.js';
import { byCreation, opened, store, useDatabase } from './store-suite.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`store on ${fixture.name}`, () => {
    useDatabase(fixture);

    describe('provider keys', () => {
      it('creates and gets a key, scoped to its account', async () => {
        const { account } = await newAccount(store);
        const { account: other } = await newAccount(store);
        const input = keyInput(account.id, { name: 'prod', provider: 'anthropic', hint: '9f3a' });
        const key = await store.keys.create(input);
        expect(key).toEqual({
          id: input.id,
          accountId: account.id,
          name: 'prod',
          provider: 'anthropic',
          hint: '9f3a',
          ciphertext: input.ciphertext,
          createdAt: T0,
          rotatedAt: null,
          deletedAt: null,
          tokenCount: 0,
        });
        expect(await store.keys.get(account.id, key.id)).toEqual(key);
        expect(await store.keys.get(other.id, key.id)).toBeUndefined();
        expect((await store.keys.list(other.id, { limit: 10 })).items).toEqual([]);
      });

      it('lists keys newest first across pages', async () => {
        const { account } = await newAccount(store);
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          ids.push((await store.keys.create(keyInput(account.id, { createdAt: at(i) }))).id);
        }
        const first = await store.keys.list(account.id, { limit: 2 });
        expect(first.items.map((key) => key.id)).toEqual([ids[4], ids[3]]);
        expect(first.hasMore).toBe(true);
        const { items, pages } = await allPages((page) => store.keys.list(account.id, page), 2, byCreation);
        expect(pages).toBe(3);
        expect(items.map((key) => key.id)).toEqual([...ids].reverse());
        const exact = await store.keys.list(account.id, { limit: 5 });
        expect(exact.hasMore).toBe(false);
      });

      it('rotates a key in place', async () => {
        const { account } = await newAccount(store);
        const { account: other } = await newAccount(store);
        const key = await store.keys.create(keyInput(account.id));
        await createToken(store, account.id, { keyId: key.id });
        const rotation = { ciphertext: Buffer.from('new envelope'), hint: 'n3w1', rotatedAt: at(10) };
        const rotated = await store.keys.rotate(account.id, key.id, rotation);
        expect(rotated).toEqual({
          ...key,
          ciphertext: rotation.ciphertext,
          hint: 'n3w1',
          rotatedAt: at(10),
          tokenCount: 1,
        });
        expect(await store.keys.get(account.id, key.id)).toEqual(rotated);
        expect(await store.keys.rotate(other.id, key.id, rotation)).toBeUndefined();
        expect(await store.keys.rotate(account.id, newId('key'), rotation)).toBeUndefined();

        await store.keys.delete(account.id, key.id, at(20));
        await expect(store.keys.rotate(account.id, key.id, rotation)).rejects.toMatchObject(
          new StoreConflictError('key_deleted'),
        );
      });

      it('deletes a key: destroys its ciphertext and revokes its tokens, once', async () => {
        const { account } = await newAccount(store);
        const { account: other } = await newAccount(store);
        const input = keyInput(account.id);
        const key = await store.keys.create(input);
        const live = await createToken(store, account.id, { keyId: key.id, token: { createdAt: at(1) } });
        const expired = await createToken(store, account.id, {
          keyId: key.id,
          token: { createdAt: at(2), expiresAt: at(3) },
        });
        const alreadyRevoked = await createToken(store, account.id, { keyId: key.id });
        await store.tokens.revoke(account.id, alreadyRevoked.id, at(4));
        const unrelated = await createToken(store, account.id);

        if (fixture.name === 'sqlite') expect(await sqliteFilesContain(opened, input.ciphertext)).toBe(true);
        expect(await store.keys.delete(other.id, key.id, at(10))).toBeUndefined();

        const deletion = await store.keys.delete(account.id, key.id, at(10));
        expect(deletion?.key).toEqual({ ...key, ciphertext: null, deletedAt: at(10), tokenCount: 0 });
        expect(deletion?.revokedTokens.map((token) => token.id).sort()).toEqual([live.id, expired.id].sort());
        for (const token of deletion?.revokedTokens ?? []) {
          expect(token).toMatchObject({ status: 'revoked', revokedAt: at(10) });
          expect(await store.tokens.get(account.id, token.id)).toEqual(token);
        }
        expect((await store.tokens.get(account.id, alreadyRevoked.id))?.revokedAt).toBe(at(4));
        expect((await store.tokens.get(account.id, unrelated.id))?.status).toBe('active');
        expect((await store.tokens.findByDigest(live.digest))?.ciphertext).toBeNull();

        const rows = await rawQuery(
          fixture.name,
          opened,
          'SELECT ciphertext FROM provider_keys WHERE id = ?',
          [key.id],
        );
        expect(rows).toEqual([{ ciphertext: null }]);
        if (fixture.name === 'sqlite') expect(await sqliteFilesContain(opened, input.ciphertext)).toBe(false);

        const again = await store.keys.delete(account.id, key.id, at(20));
        expect(again).toEqual({ key: deletion?.key, revokedTokens: [] });
        expect(await store.keys.delete(account.id, newId('key'), at(20))).toBeUndefined();
      });

      it('counts the active tokens of each key', async () => {
        const { account } = await newAccount(store);
        const key = await store.keys.create(keyInput(account.id));
        const tokens: TokenRecord[] = [];
        for (let i = 0; i < 3; i++) tokens.push(await createToken(store, account.id, { keyId: key.id }));
        await createToken(store, account.id);
        expect((await store.keys.get(account.id, key.id))?.tokenCount).toBe(3);
        await store.tokens.revoke(account.id, tokens[0]?.id ?? '', at(1));
        expect((await store.keys.get(account.id, key.id))?.tokenCount).toBe(2);
        const listed = await store.keys.list(account.id, { limit: 10 });
        expect(listed.items.find((item) => item.id === key.id)?.tokenCount).toBe(2);
        expect(listed.items.filter((item) => item.id !== key.id).map((item) => item.tokenCount)).toEqual([1]);
      });
    });
  });
}
