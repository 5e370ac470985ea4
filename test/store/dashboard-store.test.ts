import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApiKey, newId, secretDigest } from '../../src/ids/formats.js';
import type { Store } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { at, newAccount, rawQuery } from './helpers.js';

const HOUR = 3600;

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`dashboard store on ${fixture.name}`, () => {
    let opened: OpenedDatabase;
    let store: Store;

    beforeAll(async () => {
      opened = await fixture.create();
      store = opened.store;
    });
    afterAll(async () => {
      await opened.cleanup();
    });
    const liveKeyOf = async (accountId: string): Promise<string> => {
      const [key] = (await store.apiKeys.list(accountId, { limit: 1 })).items;
      if (key === undefined) throw new Error('the account has no live API key');
      return key.id;
    };

    describe('sessions', () => {
      const newSession = async (accountId: string, createdAt = at(0), apiKeyId?: string) => {
        const digest = secretDigest(randomBytes(32).toString('base64url'));
        await store.sessions.create({
          digest,
          accountId,
          apiKeyId: apiKeyId ?? (await liveKeyOf(accountId)),
          createdAt,
          idleExpiresAt: new Date(Date.parse(createdAt) + 12 * HOUR * 1000).toISOString(),
          expiresAt: new Date(Date.parse(createdAt) + 7 * 24 * HOUR * 1000).toISOString(),
        });
        return digest;
      };

      it('finds a live session by digest until its idle expiry; touch moves that, never past the absolute one', async () => {
        const { account } = await newAccount(store);
        const digest = await newSession(account.id);
        expect(await store.sessions.findLive(digest, at(HOUR))).toMatchObject({
          accountId: account.id,
          lastSeenAt: at(0),
        });
        expect(await store.sessions.findLive(digest, at(12 * HOUR))).toBeUndefined();
        await store.sessions.touch(digest, at(11 * HOUR), at(23 * HOUR));
        expect(await store.sessions.findLive(digest, at(20 * HOUR))).toMatchObject({
          lastSeenAt: at(11 * HOUR),
        });
        await store.sessions.touch(digest, at(20 * HOUR), at(30 * 24 * HOUR));
        const session = await store.sessions.findLive(digest, at(6 * 24 * HOUR));
        expect(session?.idleExpiresAt).toBe(at(7 * 24 * HOUR));
        expect(await store.sessions.findLive(digest, at(7 * 24 * HOUR))).toBeUndefined();
      });

      it('delete ends a session; purgeExpired removes only expired ones', async () => {
        const { account } = await newAccount(store);
        const ended = await newSession(account.id);
        expect(await store.sessions.delete(ended)).toBe(true);
        expect(await store.sessions.delete(ended)).toBe(false);
        expect(await store.sessions.findLive(ended, at(1))).toBeUndefined();

        const old = await newSession(account.id, at(0));
        const fresh = await newSession(account.id, at(24 * HOUR));
        expect(await store.sessions.purgeExpired(at(25 * HOUR))).toBeGreaterThanOrEqual(1);
        expect(await store.sessions.findLive(fresh, at(25 * HOUR))).toBeDefined();
        const rows = await rawQuery(fixture.name, opened, 'SELECT digest FROM dashboard_sessions', []);
        expect(rows.map((r) => (r as { digest: string }).digest)).not.toContain(old);
      });

      it('a session lives only as long as the API key it was opened with: revoked or replaced, it ends', async () => {
        const { account } = await newAccount(store);
        const first = await liveKeyOf(account.id);
        const revokedWith = await newSession(account.id, at(0), first);
        const second = await store.apiKeys.create({
          id: newId('apiKey'),
          accountId: account.id,
          name: 'second',
          scope: 'full',
          digest: secretDigest(newApiKey()),
          start: 'svc_sk_ab',
          createdAt: at(0),
        });
        const replacedWith = await newSession(account.id, at(0), second.id);
        expect(await store.sessions.findLive(revokedWith, at(1))).toBeDefined();
        expect(await store.sessions.findLive(replacedWith, at(1))).toBeDefined();

        await store.apiKeys.revoke(account.id, first, at(2));
        expect(await store.sessions.findLive(revokedWith, at(3))).toBeUndefined();
        expect(await store.sessions.findLive(replacedWith, at(3))).toBeDefined();

        await store.apiKeys.replace(
          {
            id: newId('apiKey'),
            accountId: account.id,
            name: 'second',
            digest: secretDigest(newApiKey()),
            start: 'svc_sk_cd',
            createdAt: at(4),
          },
          at(4),
        );
        expect(await store.sessions.findLive(replacedWith, at(5))).toBeUndefined();
      });

      it('stores the digest only: a 64-hex column, never the cookie value', async () => {
        const { account } = await newAccount(store);
        const value = randomBytes(32).toString('base64url');
        await store.sessions.create({
          digest: secretDigest(value),
          accountId: account.id,
          apiKeyId: await liveKeyOf(account.id),
          createdAt: at(0),
          idleExpiresAt: at(HOUR),
          expiresAt: at(2 * HOUR),
        });
        const rows = await rawQuery(fixture.name, opened, 'SELECT * FROM dashboard_sessions', []);
        const text = JSON.stringify(rows);
        expect(text).not.toContain(value);
        expect(text).toContain(secretDigest(value));
      });
    });

    describe('usage rollups', () => {
      it('adds counts per account, hour and outcome, and reads a range oldest first', async () => {
        const { account } = await newAccount(store);
        const { account: other } = await newAccount(store);
        const h = (n: number) => at(n * HOUR);
        await store.usageRollups.add([
          { accountId: account.id, hour: h(1), outcome: 'forwarded', requests: 3 },
          { accountId: account.id, hour: h(1), outcome: 'ip_backoff', requests: 1 },
          { accountId: other.id, hour: h(1), outcome: 'forwarded', requests: 9 },
        ]);
        await store.usageRollups.add([
          { accountId: account.id, hour: h(1), outcome: 'forwarded', requests: 2 },
          { accountId: account.id, hour: h(0), outcome: 'forwarded', requests: 1 },
          { accountId: account.id, hour: h(5), outcome: 'forwarded', requests: 1 },
          { accountId: account.id, hour: h(2), outcome: 'forwarded', requests: 0 },
        ]);
        expect(await store.usageRollups.range(account.id, h(0), h(5))).toEqual([
          { accountId: account.id, hour: h(0), outcome: 'forwarded', requests: 1 },
          { accountId: account.id, hour: h(1), outcome: 'forwarded', requests: 5 },
          { accountId: account.id, hour: h(1), outcome: 'ip_backoff', requests: 1 },
        ]);
        expect(await store.usageRollups.range(other.id, h(0), h(24))).toHaveLength(1);
      });

      it('two concurrent writers of the same rows lose no counts', async () => {
        const { account } = await newAccount(store);
        const row = { accountId: account.id, hour: at(0), outcome: 'forwarded', requests: 1 };
        await Promise.all(Array.from({ length: 20 }, () => store.usageRollups.add([row])));
        expect((await store.usageRollups.range(account.id, at(0), at(HOUR)))[0]?.requests).toBe(20);
      });
    });
  });
}
