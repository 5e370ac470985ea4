import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.js';
import { CLAIM_WINDOW } from '../../src/store/kysely/deliveries.js';
import { newId } from '../../src/ids/formats.js';
import type { ClaimFilter, Store } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const at = (s: number): string => new Date(T0 + s * 1000).toISOString();
const NOW = at(60);

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`fair claims from the outbox (${fixture.name})`, () => {
    let db: OpenedDatabase;
    let store: Store;
    const names = new Map<string, string>();
    let a = '';
    let b = '';
    let wa1 = '';

    beforeAll(async () => {
      db = await fixture.create();
      store = db.store;
      a = (await createAccount(store, 'a', 'unlimited', new Date(T0))).account.id;
      b = (await createAccount(store, 'b', 'unlimited', new Date(T0))).account.id;
      const hook = async (accountId: string, name: string): Promise<string> => {
        const w = await store.webhooks.create({
          id: newId('webhook'),
          accountId,
          url: `https://${name}.example.com/hook`,
          events: ['*'],
          secret: Buffer.alloc(16),
          createdAt: at(0),
        });
        names.set(w.id, name);
        return w.id;
      };
      wa1 = await hook(a, 'wa1');
      await hook(a, 'wa2');
      await hook(b, 'wb1');
      const append = (accountId: string, type: 'anomaly.detected' | 'breach.detected', s: number) =>
        store.events.append([{ id: newId('event'), accountId, type, createdAt: at(s), data: { s } }], {
          emailTypes: [],
        });
      // Account a: three older events to two endpoints; account b: one newer breach alert.
      for (const s of [1, 2, 3]) await append(a, 'anomaly.detected', s);
      await append(b, 'breach.detected', 4);
    });
    afterAll(async () => {
      await db?.cleanup();
    });

    /** Claims with a lease that ends at once, so every claim sees every due delivery. */
    async function claim(limit: number, filter?: ClaimFilter): Promise<string[]> {
      const claimed = await store.deliveries.claim(NOW, NOW, limit, filter);
      return claimed.map((d) => `${names.get(d.webhook?.id ?? '') ?? '?'}@${String(d.event.data.s)}`);
    }

    it.each<[string, number, ClaimFilter | undefined, string[]]>([
      // Turns across accounts: b's only delivery is taken before a's second, though a's are older.
      ['round-robin', 3, undefined, ['wa1@1', 'wa2@1', 'wb1@4']],
      ['one per account', 10, { perAccount: 1 }, ['wa1@1|wa2@1', 'wb1@4']],
      ['one per endpoint', 10, { perWebhook: 1 }, ['wa1@1', 'wa2@1', 'wb1@4']],
      ['accounts at their cap skipped', 10, { skipAccounts: ['A'] }, ['wb1@4']],
      ['endpoints at their cap skipped', 2, { skipWebhooks: ['WA1'], perAccount: 1 }, ['wa2@1', 'wb1@4']],
      ['by event type', 10, { eventTypes: ['breach.detected'] }, ['wb1@4']],
      ['by channel', 10, { channel: 'email' }, []],
    ])('%s', async (_name, limit, filter, expected) => {
      const resolved =
        filter === undefined
          ? undefined
          : {
              ...filter,
              ...(filter.skipAccounts ? { skipAccounts: [a] } : {}),
              ...(filter.skipWebhooks ? { skipWebhooks: [wa1] } : {}),
            };
      const got = await claim(limit, resolved);
      expect(got).toHaveLength(expected.length);
      // Which deliveries, in name order ('x|y': either one).
      got.sort().forEach((g, i) => expect(expected[i]?.split('|')).toContain(g));
    });

    it('takes every due delivery when nothing restricts it', async () => {
      expect((await claim(100)).sort()).toEqual(
        ['wa1@1', 'wa1@2', 'wa1@3', 'wa2@1', 'wa2@2', 'wa2@3', 'wb1@4'].sort(),
      );
    });
  });
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`claims rank a bounded window of due rows (${fixture.name})`, () => {
    let db: OpenedDatabase;
    let deep = '';
    let other = '';

    beforeAll(async () => {
      db = await fixture.create();
      const store = db.store;
      deep = (await createAccount(store, 'deep', 'unlimited', new Date(T0))).account.id;
      other = (await createAccount(store, 'other', 'unlimited', new Date(T0))).account.id;
      for (const accountId of [deep, other])
        await store.webhooks.create({
          id: newId('webhook'),
          accountId,
          url: `https://${accountId.toLowerCase()}.example.com/hook`,
          events: ['*'],
          secret: Buffer.alloc(16),
          createdAt: at(0),
        });
      // A backlog deeper than the window, all older than the other account's one delivery.
      await store.events.append(
        Array.from({ length: CLAIM_WINDOW + 20 }, (_, i) => ({
          id: newId('event'),
          accountId: deep,
          type: 'anomaly.detected' as const,
          createdAt: at(1 + i / 100),
          data: { i },
        })),
        { emailTypes: [] },
      );
      await store.events.append(
        [{ id: newId('event'), accountId: other, type: 'anomaly.detected', createdAt: at(50), data: {} }],
        { emailTypes: [] },
      );
    });
    afterAll(async () => {
      await db?.cleanup();
    });

    it('sees only the oldest rows, yet reaches the account behind the backlog once the deep one is at its cap', async () => {
      const accounts = async (filter: ClaimFilter) =>
        (await db.store.deliveries.claim(NOW, NOW, 10, filter)).map((d) => d.event.accountId);
      // The other account's delivery lies beyond the window: only the deep backlog is ranked.
      expect(new Set(await accounts({ perAccount: 1 }))).toEqual(new Set([deep]));
      // The worker's next claim excludes the account at its cap before the window is taken.
      expect(await accounts({ perAccount: 1, skipAccounts: [deep] })).toEqual([other]);
    });
  });
}
