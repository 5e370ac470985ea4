import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids/formats.js';
import { timestampPosition, type Page, type PageQuery } from '../../src/store/records.js';
import type { Store } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { refuseStatements } from '../support/refusing-trigger.js';
import {
  allPages,
  anomalyEntry,
  at,
  createToken,
  newAccount,
  requestLogEntry as logEntry,
} from './helpers.js';

/** Every item of a timestamp-ordered list, page by page. */
async function walk<T extends { id: string; timestamp: string }>(
  list: (page: PageQuery) => Promise<Page<T>>,
  limit: number,
): Promise<T[]> {
  return (await allPages(list, limit, timestampPosition)).items;
}

const ids = (page: Page<{ id: string }>): string[] => page.items.map((item) => item.id);

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`request and anomaly logs on ${fixture.name}`, () => {
    let opened: OpenedDatabase;
    let store: Store;

    beforeAll(async () => {
      opened = await fixture.create();
      store = opened.store;
    });

    afterAll(async () => {
      await opened.cleanup();
    });

    describe('request logs', () => {
      it('stores records and lists them newest first, exactly as given', async () => {
        const { account } = await newAccount(store);
        const token = await createToken(store, account.id);
        const refused = logEntry({
          accountId: account.id,
          tokenId: token.id,
          timestamp: at(1),
          origin: null,
          country: null,
          status: 403,
          authorized: false,
          latencyMs: 0,
          errorCode: 'origin_not_allowed',
        });
        const forwarded = logEntry({ accountId: account.id, tokenId: token.id, timestamp: at(2) });
        await store.requestLogs.insertMany([refused, forwarded]);
        const page = await store.requestLogs.list(account.id, {}, { limit: 10 });
        expect(page).toEqual({ items: [forwarded, refused], hasMore: false });
      });

      it('ignores a record stored twice, so a retried batch succeeds', async () => {
        const { account } = await newAccount(store);
        const first = logEntry({ accountId: account.id });
        await store.requestLogs.insertMany([first]);
        const second = logEntry({ accountId: account.id, timestamp: at(1) });
        await store.requestLogs.insertMany([first, second, { ...first, status: 500 }]);
        const page = await store.requestLogs.list(account.id, {}, { limit: 10 });
        expect(page.items).toEqual([second, first]);
        await store.requestLogs.insertMany([]);
      });

      it('filters by token and by authorized', async () => {
        const { account } = await newAccount(store);
        const a = await createToken(store, account.id);
        const b = await createToken(store, account.id);
        const aOk = logEntry({ accountId: account.id, tokenId: a.id, timestamp: at(1) });
        const aBad = logEntry({ accountId: account.id, tokenId: a.id, timestamp: at(2), authorized: false });
        const bOk = logEntry({ accountId: account.id, tokenId: b.id, timestamp: at(3) });
        await store.requestLogs.insertMany([aOk, aBad, bOk]);
        const list = (filter: Parameters<Store['requestLogs']['list']>[1]) =>
          store.requestLogs.list(account.id, filter, { limit: 10 });
        expect(ids(await list({}))).toEqual([bOk.id, aBad.id, aOk.id]);
        expect(ids(await list({ tokenId: a.id }))).toEqual([aBad.id, aOk.id]);
        expect(ids(await list({ authorized: true }))).toEqual([bOk.id, aOk.id]);
        expect(ids(await list({ authorized: false }))).toEqual([aBad.id]);
        expect(ids(await list({ tokenId: a.id, authorized: true }))).toEqual([aOk.id]);
        expect(ids(await list({ tokenId: newId('key') }))).toEqual([]);
      });

      it('paginates across identical timestamps, ties broken by id, in large batches', async () => {
        const { account } = await newAccount(store);
        // More rows than one INSERT statement carries.
        const entries = Array.from({ length: 1203 }, (_, i) =>
          logEntry({ accountId: account.id, timestamp: at(Math.floor(i / 10)) }),
        );
        await store.requestLogs.insertMany(entries);
        const expected = [...entries]
          .sort((x, y) =>
            x.timestamp === y.timestamp ? (x.id < y.id ? 1 : -1) : x.timestamp < y.timestamp ? 1 : -1,
          )
          .map((entry) => entry.id);
        const full = await walk((page) => store.requestLogs.list(account.id, {}, page), 100);
        expect(full.map((entry) => entry.id)).toEqual(expected);
        const small = await walk((page) => store.requestLogs.list(account.id, {}, page), 7);
        expect(small.map((entry) => entry.id)).toEqual(expected);
        const first = await store.requestLogs.list(account.id, {}, { limit: 3 });
        expect(first.hasMore).toBe(true);
        expect(ids(first)).toEqual(expected.slice(0, 3));
      });

      it('never shows a record to another account; records without an account to none', async () => {
        const { account } = await newAccount(store);
        const { account: other } = await newAccount(store);
        const token = await createToken(store, account.id);
        const mine = logEntry({ accountId: account.id, tokenId: token.id });
        const anonymous = logEntry({ status: 401, authorized: false });
        await store.requestLogs.insertMany([mine, anonymous]);
        expect(ids(await store.requestLogs.list(other.id, {}, { limit: 10 }))).toEqual([]);
        expect(ids(await store.requestLogs.list(other.id, { tokenId: token.id }, { limit: 10 }))).toEqual([]);
        expect(ids(await store.requestLogs.list(account.id, {}, { limit: 10 }))).toEqual([mine.id]);
      });
    });

    describe('anomalies', () => {
      it('stores entries with their details and lists them newest first, filtered by token', async () => {
        const { account } = await newAccount(store);
        const { account: other } = await newAccount(store);
        const a = await createToken(store, account.id);
        const b = await createToken(store, account.id);
        const breach = anomalyEntry(account.id, a.id, { timestamp: at(1), country: 'FR' });
        const backoff = anomalyEntry(account.id, b.id, {
          timestamp: at(2),
          reason: 'ip_backoff',
          origin: null,
        });
        const spike = anomalyEntry(account.id, a.id, {
          timestamp: at(3),
          kind: 'rate_spike',
          reason: 'rate_spike',
          details: { rate: 12.5, baseline: [1, 2] },
        });
        await store.anomalies.insertMany([breach, backoff, spike]);
        await store.anomalies.insertMany([breach]);
        expect(await store.anomalies.list(account.id, {}, { limit: 10 })).toEqual({
          items: [spike, backoff, breach],
          hasMore: false,
        });
        expect(ids(await store.anomalies.list(account.id, { tokenId: a.id }, { limit: 10 }))).toEqual([
          spike.id,
          breach.id,
        ]);
        expect(ids(await store.anomalies.list(other.id, {}, { limit: 10 }))).toEqual([]);
      });

      it('paginates across identical timestamps', async () => {
        const { account } = await newAccount(store);
        const token = await createToken(store, account.id);
        const entries = Array.from({ length: 25 }, (_, i) =>
          anomalyEntry(account.id, token.id, { timestamp: at(i % 3) }),
        );
        await store.anomalies.insertMany(entries);
        const full = await store.anomalies.list(account.id, {}, { limit: 100 });
        expect(full.items).toHaveLength(25);
        for (const limit of [1, 4, 10]) {
          const items = await walk((page) => store.anomalies.list(account.id, {}, page), limit);
          expect(items.map((item) => item.id)).toEqual(ids(full));
        }
      });
    });

    describe('tokens.recordUsage', () => {
      it('adds to request_count and usage, moving last_used_at forward only', async () => {
        const { account } = await newAccount(store);
        const a = await createToken(store, account.id);
        const b = await createToken(store, account.id);
        await store.tokens.recordUsage([
          { tokenId: a.id, accountId: account.id, count: 3, lastUsedAt: at(10) },
          { tokenId: b.id, accountId: account.id, count: 2, lastUsedAt: at(5) },
        ]);
        await store.tokens.recordUsage([
          { tokenId: a.id, accountId: account.id, count: 4, lastUsedAt: at(7) },
        ]);
        const tokenA = await store.tokens.get(account.id, a.id);
        expect(tokenA).toMatchObject({ requestCount: 7, lastUsedAt: at(10) });
        expect(await store.tokens.get(account.id, b.id)).toMatchObject({
          requestCount: 2,
          lastUsedAt: at(5),
        });
        expect(await store.accounts.usage(account.id, '2026-01')).toBe(9);
        await store.tokens.recordUsage([]);
        await store.tokens.recordUsage([
          { tokenId: a.id, accountId: account.id, count: 0, lastUsedAt: at(99) },
        ]);
        expect(await store.tokens.get(account.id, a.id)).toEqual(tokenA);
      });

      it('counts usage in the month (UTC) of each entry', async () => {
        const { account } = await newAccount(store);
        const token = await createToken(store, account.id);
        await store.tokens.recordUsage([
          { tokenId: token.id, accountId: account.id, count: 5, lastUsedAt: '2026-01-31T23:59:59.999Z' },
          { tokenId: token.id, accountId: account.id, count: 2, lastUsedAt: '2026-02-01T00:00:00.000Z' },
        ]);
        await store.tokens.recordUsage([
          { tokenId: token.id, accountId: account.id, count: 1, lastUsedAt: '2026-02-03T10:00:00.000Z' },
        ]);
        expect(await store.accounts.usage(account.id, '2026-01')).toBe(5);
        expect(await store.accounts.usage(account.id, '2026-02')).toBe(3);
        expect(await store.tokens.get(account.id, token.id)).toMatchObject({
          requestCount: 8,
          lastUsedAt: '2026-02-03T10:00:00.000Z',
        });
      });

      it('touches only the named account', async () => {
        const { account } = await newAccount(store);
        const { account: other } = await newAccount(store);
        const token = await createToken(store, account.id);
        await store.tokens.recordUsage([
          { tokenId: token.id, accountId: other.id, count: 4, lastUsedAt: at(1) },
        ]);
        expect(await store.tokens.get(account.id, token.id)).toMatchObject({
          requestCount: 0,
          lastUsedAt: null,
        });
        expect(await store.accounts.usage(account.id, '2026-01')).toBe(0);
      });

      it('applies a batch all or nothing', async () => {
        const { account } = await newAccount(store);
        const token = await createToken(store, account.id);
        // The monthly usage row is written after the token's count: refused, nothing may be kept.
        const accept = await refuseStatements(store, 'usage', 'insert', 'usage refused');
        try {
          await expect(
            store.tokens.recordUsage([
              { tokenId: token.id, accountId: account.id, count: 1, lastUsedAt: at(1) },
            ]),
          ).rejects.toThrow('usage refused');
        } finally {
          await accept();
        }
        expect(await store.tokens.get(account.id, token.id)).toMatchObject({ requestCount: 0 });
        expect(await store.accounts.usage(account.id, '2026-01')).toBe(0);
      });

      it('counts concurrent batches for the same tokens exactly', async () => {
        const { account } = await newAccount(store);
        const a = await createToken(store, account.id);
        const b = await createToken(store, account.id);
        await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            store.tokens.recordUsage(
              (i % 2 === 0 ? [a, b] : [b, a]).map((token) => ({
                tokenId: token.id,
                accountId: account.id,
                count: 1,
                lastUsedAt: at(i),
              })),
            ),
          ),
        );
        expect(await store.tokens.get(account.id, a.id)).toMatchObject({
          requestCount: 8,
          lastUsedAt: at(7),
        });
        expect(await store.tokens.get(account.id, b.id)).toMatchObject({ requestCount: 8 });
        expect(await store.accounts.usage(account.id, '2026-01')).toBe(16);
      });
    });
  });
}
