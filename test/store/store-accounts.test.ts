import { describe, expect, it } from 'vitest';
import { newId, secretDigest } from '../../src/ids/formats.js';
import { databases } from '../support/databases.js';
import { at, createToken, newAccount, rawQuery, T0 } from './helpers.js';
import { opened, store, useDatabase } from './store-suite.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`store on ${fixture.name}`, () => {
    useDatabase(fixture);

    describe('accounts', () => {
      it('creates, gets, counts and updates accounts', async () => {
        const before = await store.accounts.count();
        const { account } = await newAccount(store);
        expect(account).toMatchObject({ name: 'Acme', plan: 'free', alertEmail: null, createdAt: T0 });
        expect(store.dialect).toBe(fixture.name);
        expect(await store.accounts.count()).toBe(before + 1);
        expect(await store.accounts.get(account.id)).toEqual(account);
        expect(await store.accounts.get(newId('account'))).toBeUndefined();

        const renamed = await store.accounts.update(account.id, {
          name: 'Acme Ltd',
          alertEmail: 'ops@acme.example',
        });
        expect(renamed).toEqual({ ...account, name: 'Acme Ltd', alertEmail: 'ops@acme.example' });
        expect(await store.accounts.update(account.id, {})).toEqual(renamed);
        const cleared = await store.accounts.update(account.id, { alertEmail: null });
        expect(cleared?.alertEmail).toBeNull();
        expect(cleared?.name).toBe('Acme Ltd');
        expect(await store.accounts.update(newId('account'), { name: 'x' })).toBeUndefined();
      });

      it('finds an account by the digest of a live API key only', async () => {
        const { account, apiKey } = await newAccount(store, 'unlimited');
        expect(await store.accounts.findByApiKeyDigest(secretDigest(apiKey))).toEqual(account);
        expect(await store.accounts.findByApiKeyDigest(secretDigest(`${apiKey}x`))).toBeUndefined();

        await rawQuery(fixture.name, opened, 'UPDATE api_keys SET revoked_at = ? WHERE digest = ?', [
          at(1),
          secretDigest(apiKey),
        ]);
        expect(await store.accounts.findByApiKeyDigest(secretDigest(apiKey))).toBeUndefined();
      });

      it('reads usage per period, 0 when nothing was counted', async () => {
        const { account } = await newAccount(store);
        expect(await store.accounts.usage(account.id, '2026-01')).toBe(0);
        await rawQuery(
          fixture.name,
          opened,
          'INSERT INTO usage (account_id, period, requests) VALUES (?, ?, ?)',
          [account.id, '2026-01', 1234],
        );
        expect(await store.accounts.usage(account.id, '2026-01')).toBe(1234);
        expect(await store.accounts.usage(account.id, '2026-02')).toBe(0);
      });

      it('counts only tokens that are active and not past expiry', async () => {
        const { account } = await newAccount(store);
        await createToken(store, account.id);
        await createToken(store, account.id, { token: { expiresAt: at(100) } });
        const revoked = await createToken(store, account.id);
        await store.tokens.revoke(account.id, revoked.id, at(1));
        expect(await store.accounts.countActiveTokens(account.id, at(50))).toBe(2);
        expect(await store.accounts.countActiveTokens(account.id, at(100))).toBe(1);
      });
    });
  });
}
