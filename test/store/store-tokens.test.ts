import { describe, expect, it } from 'vitest';
import { newId, secretDigest } from '../../src/ids/formats.js';
import { StoreConflictError, StoreNotFoundError, StorePlanLimitError } from '../../src/store/errors.js';
import { tokenStatusAt, type TokenRecord } from '../../src/store/records.js';
import { databases } from '../support/databases.js';
import { allPages, at, createToken, keyInput, newAccount, rawQuery, T0, tokenInput } from './helpers.js';
import { byCreation, opened, store, useDatabase } from './store-suite.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`store on ${fixture.name}`, () => {
    useDatabase(fixture);

    describe('tokens', () => {
      it('creates a token with a new key and finds it by digest', async () => {
        const { account } = await newAccount(store);
        const input = tokenInput(account.id, {
          provider: 'anthropic',
          authorizedOrigins: ['https://a.example', 'https://*.b.example'],
          authorizedIps: ['10.0.0.0/8'],
          rateLimit: { requests: 100, window: '1m' },
          expiresAt: at(3600),
        });
        const newKey = keyInput(account.id, { provider: 'anthropic' });
        const token = await store.tokens.create({ token: input, key: { newKey }, maxActiveTokens: 3 });
        expect(token).toEqual({
          id: input.id,
          accountId: account.id,
          name: 'web',
          provider: 'anthropic',
          keyId: newKey.id,
          digest: input.digest,
          hint: input.hint,
          authorizedOrigins: ['https://a.example', 'https://*.b.example'],
          authorizedIps: ['10.0.0.0/8'],
          rateLimit: { requests: 100, window: '1m' },
          status: 'active',
          createdAt: T0,
          lastUsedAt: null,
          expiresAt: at(3600),
          revokedAt: null,
          requestCount: 0,
          budget: null,
        });
        expect(await store.tokens.get(account.id, token.id)).toEqual(token);
        expect((await store.keys.get(account.id, newKey.id))?.tokenCount).toBe(1);
        expect(await store.tokens.findByDigest(input.digest)).toEqual({
          token,
          ciphertext: newKey.ciphertext,
        });
        expect(await store.tokens.findByDigest(secretDigest('svc_hb_nope'))).toBeUndefined();
      });

      it('creates a token on an existing key of the same account and provider', async () => {
        const { account } = await newAccount(store);
        const { account: other } = await newAccount(store);
        const key = await store.keys.create(keyInput(account.id));
        const token = await createToken(store, account.id, { keyId: key.id, max: 3 });
        expect(token.keyId).toBe(key.id);

        const otherKey = await store.keys.create(keyInput(other.id));
        await expect(createToken(store, account.id, { keyId: otherKey.id })).rejects.toMatchObject(
          new StoreNotFoundError('key'),
        );
        await expect(createToken(store, account.id, { keyId: newId('key') })).rejects.toBeInstanceOf(
          StoreNotFoundError,
        );
        await expect(
          createToken(store, account.id, { keyId: key.id, token: { provider: 'anthropic' } }),
        ).rejects.toMatchObject(new StoreConflictError('provider_mismatch'));
        await store.keys.delete(account.id, key.id, at(1));
        await expect(createToken(store, account.id, { keyId: key.id })).rejects.toMatchObject(
          new StoreConflictError('key_deleted'),
        );
        await expect(createToken(store, newId('account'))).rejects.toMatchObject(
          new StoreNotFoundError('account'),
        );
      });

      it('enforces the plan cap on active tokens, atomically with the new key', async () => {
        const { account } = await newAccount(store);
        await createToken(store, account.id, { token: { expiresAt: at(5) } });
        const tokens: TokenRecord[] = [];
        for (let i = 0; i < 2; i++) tokens.push(await createToken(store, account.id, { max: 3 }));
        // The expiring token still counts at T0...
        const failing = createToken(store, account.id, { max: 3 });
        await expect(failing).rejects.toBeInstanceOf(StorePlanLimitError);
        await expect(failing).rejects.toMatchObject({ limit: 3 });
        // ...and the refused creation left no key behind.
        expect((await store.keys.list(account.id, { limit: 10 })).items).toHaveLength(3);
        // ...but not once it has expired at the new token's creation time.
        await createToken(store, account.id, { max: 3, token: { createdAt: at(5) } });
        await expect(
          createToken(store, account.id, { max: 3, token: { createdAt: at(6) } }),
        ).rejects.toBeInstanceOf(StorePlanLimitError);
        await store.tokens.revoke(account.id, tokens[0]?.id ?? '', at(7));
        await createToken(store, account.id, { max: 3, token: { createdAt: at(8) } });
        await createToken(store, account.id, { max: null, token: { createdAt: at(9) } });
        expect(await store.accounts.countActiveTokens(account.id, at(10))).toBe(4);
      });

      it('lets exactly `cap` of 10 concurrent creations through', async () => {
        const { account } = await newAccount(store);
        const key = await store.keys.create(keyInput(account.id));
        const results = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) =>
            createToken(store, account.id, i % 2 === 0 ? { max: 3 } : { max: 3, keyId: key.id }),
          ),
        );
        const fulfilled = results.filter((result) => result.status === 'fulfilled');
        const rejected = results.filter((result) => result.status === 'rejected');
        expect(fulfilled).toHaveLength(3);
        for (const result of rejected) expect(result.reason).toBeInstanceOf(StorePlanLimitError);
        expect(await store.accounts.countActiveTokens(account.id, T0)).toBe(3);
      });

      it('never shows a token to another account', async () => {
        const { account } = await newAccount(store);
        const { account: other } = await newAccount(store);
        const token = await createToken(store, account.id);
        expect(await store.tokens.get(other.id, token.id)).toBeUndefined();
        expect((await store.tokens.list(other.id, { now: T0 }, { limit: 10 })).items).toEqual([]);
        expect(await store.tokens.revoke(other.id, token.id, at(1))).toBeUndefined();
        expect((await store.tokens.get(account.id, token.id))?.status).toBe('active');
        expect(await store.accounts.countActiveTokens(other.id, T0)).toBe(0);
      });

      it('filters by status, deriving expiry from expires_at', async () => {
        const { account } = await newAccount(store);
        const open = await createToken(store, account.id, { token: { createdAt: at(1) } });
        const later = await createToken(store, account.id, {
          token: { createdAt: at(2), expiresAt: at(1000) },
        });
        const lapsed = await createToken(store, account.id, {
          token: { createdAt: at(3), expiresAt: at(50) },
        });
        const marked = await createToken(store, account.id, {
          token: { createdAt: at(4), expiresAt: at(40) },
        });
        await rawQuery(fixture.name, opened, "UPDATE tokens SET status = 'expired' WHERE id = ?", [
          marked.id,
        ]);
        const revoked = await createToken(store, account.id, { token: { createdAt: at(5) } });
        await store.tokens.revoke(account.id, revoked.id, at(6));

        const now = at(100);
        const ids = async (status?: 'active' | 'expired' | 'revoked'): Promise<string[]> =>
          (await store.tokens.list(account.id, { status, now }, { limit: 10 })).items.map(
            (token) => token.id,
          );
        expect(await ids()).toEqual([revoked.id, marked.id, lapsed.id, later.id, open.id]);
        expect(await ids('active')).toEqual([later.id, open.id]);
        expect(await ids('expired')).toEqual([marked.id, lapsed.id]);
        expect(await ids('revoked')).toEqual([revoked.id]);
        // At the exact expiry instant the token is already expired.
        const atExpiry = await store.tokens.list(
          account.id,
          { status: 'expired', now: at(50) },
          { limit: 10 },
        );
        expect(atExpiry.items.map((token) => token.id)).toEqual([marked.id, lapsed.id]);

        const listed = await store.tokens.list(account.id, { status: 'expired', now }, { limit: 10 });
        const stored = listed.items.find((token) => token.id === lapsed.id);
        expect(stored?.status).toBe('active');
        expect(stored === undefined ? undefined : tokenStatusAt(stored, now)).toBe('expired');
      });

      it('paginates across pages with identical created_at, ties broken by id', async () => {
        const { account } = await newAccount(store);
        const created: TokenRecord[] = [];
        created.push(await createToken(store, account.id, { token: { createdAt: at(1) } }));
        for (let i = 0; i < 7; i++)
          created.push(await createToken(store, account.id, { token: { createdAt: at(2) } }));
        created.push(await createToken(store, account.id, { token: { createdAt: at(3) } }));

        const full = await store.tokens.list(account.id, { now: T0 }, { limit: 100 });
        expect(full.hasMore).toBe(false);
        const fullIds = full.items.map((token) => token.id);
        expect(new Set(fullIds)).toEqual(new Set(created.map((token) => token.id)));
        expect(fullIds[0]).toBe(created[8]?.id);
        expect(fullIds[8]).toBe(created[0]?.id);
        if (fixture.name === 'sqlite') {
          // SQLite compares text bytewise; PostgreSQL uses the database collation, same order for both clauses.
          const tied = created.slice(1, 8).map((token) => token.id);
          expect(fullIds.slice(1, 8)).toEqual([...tied].sort().reverse());
        }

        for (const limit of [1, 2, 3, 4]) {
          const { items, pages } = await allPages(
            (page) => store.tokens.list(account.id, { now: T0 }, page),
            limit,
            byCreation,
          );
          expect(items.map((token) => token.id)).toEqual(fullIds);
          expect(pages).toBe(Math.ceil(9 / limit));
        }
        const active = await allPages(
          (page) => store.tokens.list(account.id, { status: 'active', now: T0 }, page),
          2,
          byCreation,
        );
        expect(active.items.map((token) => token.id)).toEqual(fullIds);
      });

      it('revokes idempotently, expired tokens included', async () => {
        const { account } = await newAccount(store);
        const token = await createToken(store, account.id);
        const first = await store.tokens.revoke(account.id, token.id, at(10));
        expect(first).toEqual({ token: { ...token, status: 'revoked', revokedAt: at(10) }, changed: true });
        const second = await store.tokens.revoke(account.id, token.id, at(20));
        expect(second).toEqual({ token: first?.token, changed: false });
        expect(await store.tokens.revoke(account.id, 'nope', at(20))).toBeUndefined();

        const lapsing = await createToken(store, account.id, { token: { expiresAt: at(5) } });
        const revoked = await store.tokens.revoke(account.id, lapsing.id, at(10));
        expect(revoked?.changed).toBe(true);
        expect(revoked?.token.status).toBe('revoked');
        expect((await store.tokens.findByDigest(token.digest))?.token.status).toBe('revoked');
      });
    });
  });
}
