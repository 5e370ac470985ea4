import { sql } from 'kysely';
import type { UsageRollup, UsageRollupRepo } from '../rollup-records.js';
import type { RepoContext } from './context.js';
import { transact } from './transact.js';

export class KyselyUsageRollupRepo implements UsageRollupRepo {
  constructor(private readonly ctx: RepoContext) {}

  async add(rollups: readonly UsageRollup[]): Promise<void> {
    const rows = rollups
      .filter((r) => r.requests > 0)
      // One global order, so two processes adding overlapping rows on PostgreSQL wait rather than deadlock.
      .sort(
        (a, b) => order(a.accountId, b.accountId) || order(a.hour, b.hour) || order(a.outcome, b.outcome),
      );
    if (rows.length === 0) return;
    await transact(this.ctx.db, async (trx) => {
      for (const r of rows) {
        await trx
          .insertInto('usage_rollups')
          .values({ account_id: r.accountId, hour: r.hour, outcome: r.outcome, requests: r.requests })
          .onConflict((oc) =>
            oc
              .columns(['account_id', 'hour', 'outcome'])
              .doUpdateSet({ requests: sql<number>`usage_rollups.requests + excluded.requests` }),
          )
          .execute();
      }
    });
  }

  async range(accountId: string, from: string, to: string): Promise<UsageRollup[]> {
    const rows = await this.ctx.db
      .selectFrom('usage_rollups')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('hour', '>=', from)
      .where('hour', '<', to)
      .orderBy('hour')
      .orderBy('outcome')
      .execute();
    return rows.map((row) => ({
      accountId: row.account_id,
      hour: row.hour,
      outcome: row.outcome,
      requests: row.requests,
    }));
  }
}

function order(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
