import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cutoff, purgeOnce, type RetentionPolicy } from '../../src/retention/purge.js';
import { parseRetentionPeriod } from '../../src/rules/retention-period.js';
import type { Store } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { anomalyEntry, createToken, newAccount, rawQuery, requestLogEntry } from '../store/helpers.js';

const DAY = 86_400_000;
/** The injected clock: every age below is measured back from here. */
const NOW = new Date('2026-06-01T12:00:00.000Z');
const ago = (days: number, extraMs = 0): string =>
  new Date(NOW.getTime() - days * DAY + extraMs).toISOString();
const POLICY: RetentionPolicy = {
  logs: { ms: 30 * DAY, text: '30d' },
  rollups: { ms: 400 * DAY, text: '400d' },
};

describe('retention periods', () => {
  it.each([
    ['30d', 30 * DAY, '30d'],
    ['400 days', 400 * DAY, '400d'],
    ['48h', 2 * DAY, '2d'],
    ['36 hours', 36 * 3_600_000, '36h'],
    ['forever', null, 'forever'],
    ['FOREVER', null, 'forever'],
  ] as const)('%s is kept %s ms', (text, ms, canonical) => {
    expect(parseRetentionPeriod(text)).toEqual({ ok: true, ms, canonical });
  });

  it.each(['0d', '30', '30m', '1.5d', '-3d', '36501d', '', 'never'])(
    '%s is refused with the forms',
    (text) => {
      const parsed = parseRetentionPeriod(text);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.message).toMatch(/"30d".*forever/);
    },
  );

  it('forever has no cutoff; a period cuts at now minus the period', () => {
    expect(cutoff({ ms: null, text: 'forever' }, NOW)).toBeNull();
    expect(cutoff(POLICY.logs, NOW)).toBe(ago(30));
  });
});

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`purgeOnce on ${fixture.name}`, () => {
    let opened: OpenedDatabase;
    let store: Store;

    beforeAll(async () => {
      opened = await fixture.create();
      store = opened.store;
    });
    afterAll(async () => {
      await opened?.cleanup();
    });
    /** One pass at NOW, in batches of 5. */
    const purge = (policy: RetentionPolicy = POLICY, pause = () => Promise.resolve()) =>
      purgeOnce({ repo: store.retention, policy, now: NOW, batchSize: 5, pause, vacuumPages: 100 });

    it('deletes logs, anomalies and finished events past log_retention, rollups past rollup_retention, nothing newer', async () => {
      const { account } = await newAccount(store);
      const other = (await newAccount(store)).account;
      const oldLogs = Array.from({ length: 23 }, (_, i) =>
        requestLogEntry({ accountId: account.id, timestamp: ago(31, i) }),
      );
      const keptLogs = [
        requestLogEntry({ accountId: account.id, timestamp: ago(30, 1) }),
        requestLogEntry({ accountId: other.id, timestamp: ago(1) }),
      ];
      // Records no token matched are kept a day at most, whatever log_retention says.
      const unmatchedOld = requestLogEntry({ accountId: null, timestamp: ago(40) });
      const unmatchedDaysOld = requestLogEntry({ accountId: null, timestamp: ago(2) });
      const unmatchedNew = requestLogEntry({ accountId: null, timestamp: ago(1, 60_000) });
      await store.requestLogs.insertMany([
        ...oldLogs,
        ...keptLogs,
        unmatchedOld,
        unmatchedDaysOld,
        unmatchedNew,
      ]);
      const oldAnomaly = anomalyEntry(account.id, 'tok_x', { timestamp: ago(35) });
      const newAnomaly = anomalyEntry(account.id, 'tok_x', { timestamp: ago(3) });
      await store.anomalies.insertMany([oldAnomaly, newAnomaly]);

      await store.events.append(
        [
          { id: 'evt_old_done', accountId: account.id, type: 'token.revoked', createdAt: ago(40), data: {} },
          {
            id: 'evt_old_pending',
            accountId: account.id,
            type: 'token.revoked',
            createdAt: ago(40),
            data: {},
          },
          { id: 'evt_new_done', accountId: account.id, type: 'token.revoked', createdAt: ago(1), data: {} },
        ],
        { emailTypes: [] },
      );
      // Deliveries: the old finished one (with an attempt row) goes with its event, the pending one keeps its event.
      const deliveries = [
        ['dlv_old_done', 'evt_old_done', 'delivered'],
        ['dlv_old_pending', 'evt_old_pending', 'pending'],
        ['dlv_new_done', 'evt_new_done', 'failed'],
      ] as const;
      for (const [id, eventId, status] of deliveries) {
        await rawQuery(
          fixture.name,
          opened,
          `insert into deliveries (id, event_id, account_id, channel, webhook_id, email_to, status, attempts, next_attempt_at, locked_until, last_error, created_at, completed_at)
           values (?, ?, ?, 'webhook', 'wh_x', null, ?, 1, ?, null, null, ?, null)`,
          [id, eventId, account.id, status, ago(40), ago(40)],
        );
      }
      await rawQuery(
        fixture.name,
        opened,
        `insert into delivery_attempts (delivery_id, attempt, account_id, attempted_at, status_code, duration_ms, error_class) values ('dlv_old_done', 1, ?, ?, 200, 12, null)`,
        [account.id, ago(40)],
      );
      await store.usageRollups.add([
        { accountId: account.id, hour: '2025-04-01T00:00:00.000Z', outcome: 'forwarded', requests: 5 },
        { accountId: account.id, hour: '2025-04-01T00:00:00.000Z', outcome: 'ip_backoff', requests: 1 },
        {
          accountId: account.id,
          hour: ago(399).slice(0, 13) + ':00:00.000Z',
          outcome: 'forwarded',
          requests: 7,
        },
      ]);

      const pauses: number[] = [];
      const report = await purgeOnce({
        repo: store.retention,
        policy: POLICY,
        now: NOW,
        batchSize: 5,
        pause: () => {
          pauses.push(1);
          return Promise.resolve();
        },
        vacuumPages: 100,
      });
      expect(report).toMatchObject({ requestLogs: 25, anomalies: 1, events: 1, rollups: 2 });
      // 23 old rows of one account in batches of 5: four full batches, each followed by a pause.
      expect(pauses.length).toBeGreaterThanOrEqual(4);

      const ids = async (table: string): Promise<string[]> =>
        (await rawQuery(fixture.name, opened, `select id from ${table} order by id`)).map((r) =>
          String(r.id),
        );
      expect(await ids('request_logs')).toEqual([...keptLogs, unmatchedNew].map((e) => e.id).sort());
      expect(await ids('anomalies')).toEqual([newAnomaly.id]);
      expect(await ids('events')).toEqual(['evt_new_done', 'evt_old_pending']);
      expect(await ids('deliveries')).toEqual(['dlv_new_done', 'dlv_old_pending']);
      expect(await rawQuery(fixture.name, opened, 'select * from delivery_attempts')).toEqual([]);
      const rollups = await rawQuery(fixture.name, opened, 'select requests from usage_rollups');
      expect(rollups.map((r) => Number(r.requests))).toEqual([7]);

      // A second pass finds nothing more: it continues where the first stopped, and is idempotent.
      const again = await purge();
      expect(again).toMatchObject({ requestLogs: 0, anomalies: 0, events: 0, rollups: 0 });
    });

    it('per-model rollups go with rollup_retention, except what a budget still counts', async () => {
      const { account } = await newAccount(store, 'unlimited');
      const plain = await createToken(store, account.id);
      const forEver = await createToken(store, account.id);
      await store.tokens.update(
        account.id,
        forEver.id,
        { budget: { tokens: 1000, period: 'total' } },
        NOW.toISOString(),
      );
      const capped = (await newAccount(store, 'unlimited')).account;
      await store.accounts.update(capped.id, { budget: { amount_usd: 5, period: 'total' } });
      const cappedToken = await createToken(store, capped.id);
      const row = (accountId: string, tokenId: string, hour: string) => ({
        accountId,
        hour,
        tokenId,
        model: 'gpt-test',
        requests: 1,
        inputTokens: 10,
        outputTokens: 5,
        costMicros: 30,
      });
      const old = '2025-04-01T00:00:00.000Z'; // past the 400 days
      const recent = '2026-05-20T00:00:00.000Z';
      await store.usageModelRollups.add([
        row(account.id, plain.id, old),
        row(account.id, plain.id, recent),
        row(account.id, forEver.id, old),
        row(capped.id, cappedToken.id, old),
      ]);
      const report = await purge();
      expect(report.rollups).toBe(1);
      const left = async (accountId: string) =>
        (await store.usageModelRollups.range(accountId, '2000-01-01T00:00:00.000Z', NOW.toISOString())).map(
          (r) => `${r.tokenId === plain.id ? 'plain' : 'budgeted'} ${r.hour.slice(0, 10)}`,
        );
      // The old hour of the token with a total budget stays (its spend so far); so does every hour
      // of the account whose own budget is total.
      expect(await left(account.id)).toEqual(['budgeted 2025-04-01', 'plain 2026-05-20']);
      expect(await left(capped.id)).toEqual(['budgeted 2025-04-01']);
      // A short retention still keeps this month's rows: month budgets start from them.
      await store.usageModelRollups.add([row(account.id, plain.id, '2026-06-01T01:00:00.000Z')]);
      const short = await purge({ logs: POLICY.logs, rollups: { ms: DAY / 24, text: '1h' } });
      expect(short.rollups).toBeGreaterThanOrEqual(1);
      expect(await left(account.id)).toEqual(['budgeted 2025-04-01', 'plain 2026-06-01']);
    });

    it("forever keeps every account's history; records no token matched still go after a day", async () => {
      const { account } = await newAccount(store);
      await store.requestLogs.insertMany([
        requestLogEntry({ accountId: account.id, timestamp: ago(4000) }),
        requestLogEntry({ accountId: null, timestamp: ago(1, -60_000) }),
      ]);
      const report = await purge({
        logs: { ms: null, text: 'forever' },
        rollups: { ms: null, text: 'forever' },
      });
      expect(report).toMatchObject({ requestLogs: 1, anomalies: 0, events: 0, rollups: 0 });
      const rows = await rawQuery(fixture.name, opened, 'select id from request_logs where account_id = ?', [
        account.id,
      ]);
      expect(rows).toHaveLength(1);
    });
  });
}
