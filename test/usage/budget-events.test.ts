import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewEvent } from '../../src/events/publisher.js';
import { MemoryCounters } from '../../src/limits/counters.js';
import type { TokenRecord } from '../../src/store/records.js';
import { BudgetGuard, isRefusal } from '../../src/usage/budget-guard.js';
import { PriceTable } from '../../src/usage/prices.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { until } from '../support/poll.js';
import { storeDb } from '../support/store-internals.js';
import { createToken, newAccount, rawQuery } from '../store/helpers.js';

/**
 * The budget events come once per budget and period: across processes that share no counters, and
 * so across a restart without Redis (the counters start empty, the store remembers). The threshold
 * counts reserved spend, so a burst reaches it before anything settles.
 */
for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`budget events once per period (${fixture.name})`, () => {
    let opened: OpenedDatabase;
    const events: NewEvent[] = [];
    const now = Date.parse('2026-11-28T12:00:00.000Z');

    beforeAll(async () => {
      opened = await fixture.create();
    });
    afterAll(async () => {
      await opened.cleanup();
    });

    /** A process's guard: counters of its own, the one store. */
    const process = () =>
      new BudgetGuard({
        counters: new MemoryCounters(),
        prices: new PriceTable({}),
        store: opened.store,
        publisher: { publish: (e) => (events.push(e), Promise.resolve()) },
      });
    const ofToken = (type: string, token: TokenRecord) =>
      events.filter((e) => e.type === type && e.data.token_id === token.id);
    const worst = (tokens: number) => ({ model: null, inputTokens: tokens, outputTokens: 0 });

    it('the threshold is reached by a reservation, and neither event comes again after a restart', async () => {
      const { account } = await newAccount(opened.store);
      const token = await createToken(opened.store, account.id, {
        token: { budget: { tokens: 1000, period: 'day' } },
      });
      const first = process();
      // 850 reserved, nothing settled yet: 85 % of the budget.
      expect(isRefusal(await first.reserve(token, 'openai', worst(850), now))).toBe(false);
      await until('budget.threshold_reached', () => ofToken('budget.threshold_reached', token).length === 1);
      expect(isRefusal(await first.reserve(token, 'openai', worst(200), now + 1))).toBe(true);
      await until('budget.exceeded', () => ofToken('budget.exceeded', token).length === 1);

      // What the first process spent is in the rollups; a restarted process seeds its counter from them.
      await opened.store.usageModelRollups.add([
        {
          accountId: account.id,
          hour: '2026-11-28T12:00:00.000Z',
          tokenId: token.id,
          model: '',
          requests: 1,
          inputTokens: 850,
          outputTokens: 0,
          costMicros: 0,
        },
      ]);
      const restarted = process();
      expect(isRefusal(await restarted.reserve(token, 'openai', worst(10), now + 2))).toBe(false);
      expect(isRefusal(await restarted.reserve(token, 'openai', worst(500), now + 3))).toBe(true);
      // Let any publication the restarted process might make land before counting.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(ofToken('budget.threshold_reached', token)).toHaveLength(1);
      expect(ofToken('budget.exceeded', token)).toHaveLength(1);
    });

    it('a reservation another budget refuses is rolled back, and sends no threshold event', async () => {
      const { account } = await newAccount(opened.store);
      await opened.store.accounts.update(account.id, { budget: { tokens: 100, period: 'day' } });
      const token = await createToken(opened.store, account.id, {
        token: { budget: { tokens: 1000, period: 'day' } },
      });
      // 85 % of the token's budget, but more than the account's: refused by the account's.
      const refused = await process().reserve(token, 'openai', worst(850), now);
      expect(isRefusal(refused) && refused.scope).toBe('account');
      await until('budget.exceeded for the account', () =>
        events.some((e) => e.type === 'budget.exceeded' && e.accountId === account.id),
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(ofToken('budget.threshold_reached', token)).toHaveLength(0);
    });

    /** The store refuses to claim events: read-only (SQLite), or a refusal with PostgreSQL's read-only code. */
    async function refuseClaims(): Promise<() => Promise<void>> {
      const db = storeDb(opened.store);
      if (fixture.name === 'sqlite') {
        await sql`pragma query_only = on`.execute(db);
        return async () => {
          await sql`pragma query_only = off`.execute(db);
        };
      }
      await sql
        .raw(
          `create function refuse_claims() returns trigger language plpgsql as $$ begin
             raise exception 'read-only' using errcode = 'read_only_sql_transaction'; end $$;
           create trigger refuse_claims before insert or update on job_leases
             for each row execute function refuse_claims()`,
        )
        .execute(db);
      return async () => {
        await sql.raw('drop trigger refuse_claims on job_leases; drop function refuse_claims()').execute(db);
      };
    }

    it('an event whose claim the store refused is claimed by a later request, not lost', async () => {
      const { account } = await newAccount(opened.store);
      const token = await createToken(opened.store, account.id, {
        token: { budget: { tokens: 1000, period: 'day' } },
      });
      const guard = process();
      const allow = await refuseClaims();
      try {
        expect(isRefusal(await guard.reserve(token, 'openai', worst(850), now))).toBe(false);
        await new Promise((r) => setTimeout(r, 300)); // the claim refused, and settled
        expect(ofToken('budget.threshold_reached', token)).toHaveLength(0);
      } finally {
        await allow();
      }
      expect(isRefusal(await guard.reserve(token, 'openai', worst(10), now + 1))).toBe(false);
      await until('budget.threshold_reached', () => ofToken('budget.threshold_reached', token).length === 1);
    });

    it('the next period sends them again', async () => {
      const { account } = await newAccount(opened.store);
      const token = await createToken(opened.store, account.id, {
        token: { budget: { tokens: 100, period: 'day' } },
      });
      const guard = process();
      const nextDay = now + 24 * 3600 * 1000;
      expect(isRefusal(await guard.reserve(token, 'openai', worst(90), now))).toBe(false);
      expect(isRefusal(await guard.reserve(token, 'openai', worst(90), nextDay))).toBe(false);
      await until('two threshold events', () => ofToken('budget.threshold_reached', token).length === 2);
      // Each reservation publishes on its own, so the two may land in either order.
      expect(
        ofToken('budget.threshold_reached', token)
          .map((e) => String(e.data.period))
          .sort(),
      ).toEqual(['2026-11-28', '2026-11-29']);
      // The marks of ended periods are deleted (their rows would otherwise pile up): sending the
      // second day's event purges the first day's marks, without waiting for it (so: polled).
      const marks = async (): Promise<string[]> =>
        (
          await rawQuery(fixture.name, opened, "SELECT name FROM job_leases WHERE name LIKE 'once:%'", [])
        ).map((r) => (r as { name: string }).name);
      await until("the first day's marks to be purged", async () =>
        (await marks()).every((name) => !name.endsWith('2026-11-28')),
      );
      expect((await marks()).filter((name) => name.includes(token.id))).toHaveLength(1);
    });
  });
}
