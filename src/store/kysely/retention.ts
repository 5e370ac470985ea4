import { sql } from 'kysely';
import { budgetFromText } from '../../usage/budget.js';
import type { RetentionRepo, SpaceReclaim } from '../retention-records.js';
import type { RepoContext } from './context.js';
import { transact } from './transact.js';

/** `pragma auto_vacuum` answers 2 for INCREMENTAL. */
const INCREMENTAL = 2;

/**
 * Each delete picks its rows through the (account_id, time) indexes the lists use, oldest first, and
 * is its own short statement, so a writer (the log thread) waits at most one batch.
 */
export class KyselyRetentionRepo implements RetentionRepo {
  constructor(private readonly ctx: RepoContext) {}

  async historyOwners(): Promise<readonly (string | null)[]> {
    const rows = await this.ctx.db.selectFrom('accounts').select('id').orderBy('id').execute();
    return [...rows.map((row) => row.id), null];
  }

  async deleteRequestLogs(accountId: string | null, before: string, limit: number): Promise<number> {
    const { db } = this.ctx;
    const oldest = db
      .selectFrom('request_logs')
      .select('id')
      .where('account_id', accountId === null ? 'is' : '=', accountId)
      .where('timestamp', '<', before)
      .orderBy('timestamp')
      .limit(limit);
    const result = await db.deleteFrom('request_logs').where('id', 'in', oldest).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async deleteAnomalies(accountId: string, before: string, limit: number): Promise<number> {
    const { db } = this.ctx;
    const oldest = db
      .selectFrom('anomalies')
      .select('id')
      .where('account_id', '=', accountId)
      .where('timestamp', '<', before)
      .orderBy('timestamp')
      .limit(limit);
    const result = await db.deleteFrom('anomalies').where('id', 'in', oldest).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async deleteFinishedEvents(accountId: string, before: string, limit: number): Promise<number> {
    return transact(this.ctx.db, async (trx) => {
      const rows = await trx
        .selectFrom('events')
        .select('id')
        .where('account_id', '=', accountId)
        .where('created_at', '<', before)
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('deliveries')
                .select('deliveries.id')
                .whereRef('deliveries.event_id', '=', 'events.id')
                .where('deliveries.status', '=', 'pending'),
            ),
          ),
        )
        .orderBy('created_at')
        .limit(limit)
        .execute();
      if (rows.length === 0) return 0;
      const ids = rows.map((row) => row.id);
      await trx
        .deleteFrom('delivery_attempts')
        .where('delivery_id', 'in', trx.selectFrom('deliveries').select('id').where('event_id', 'in', ids))
        .execute();
      await trx.deleteFrom('deliveries').where('event_id', 'in', ids).execute();
      await trx.deleteFrom('events').where('id', 'in', ids).execute();
      return ids.length;
    });
  }

  async deleteRollups(accountId: string, before: string, limit: number): Promise<number> {
    const { db } = this.ctx;
    const hours = db
      .selectFrom('usage_rollups')
      .select('hour')
      .distinct()
      .where('account_id', '=', accountId)
      .where('hour', '<', before)
      .orderBy('hour')
      .limit(limit);
    const result = await db
      .deleteFrom('usage_rollups')
      .where('account_id', '=', accountId)
      .where('hour', 'in', hours)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async deleteModelRollups(accountId: string, before: string, limit: number): Promise<number> {
    const { db } = this.ctx;
    const account = await db
      .selectFrom('accounts')
      .select('budget')
      .where('id', '=', accountId)
      .executeTakeFirst();
    if (budgetFromText(account?.budget ?? null)?.period === 'total') return 0;
    const budgeted = await db
      .selectFrom('tokens')
      .select(['id', 'budget'])
      .where('account_id', '=', accountId)
      .where('budget', 'is not', null)
      .execute();
    const kept = budgeted.filter((t) => budgetFromText(t.budget)?.period === 'total').map((t) => t.id);
    // The kept tokens' rows are left out of the hours too: an hour holding only theirs would be picked
    // again on every pass and the purge would never get past it.
    let hours = db
      .selectFrom('usage_model_rollups')
      .select('hour')
      .distinct()
      .where('account_id', '=', accountId)
      .where('hour', '<', before);
    if (kept.length > 0) hours = hours.where('token_id', 'not in', kept);
    let doomed = db
      .deleteFrom('usage_model_rollups')
      .where('account_id', '=', accountId)
      .where('hour', 'in', hours.orderBy('hour').limit(limit));
    if (kept.length > 0) doomed = doomed.where('token_id', 'not in', kept);
    const result = await doomed.executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async reclaimSpace(maxPages: number): Promise<SpaceReclaim> {
    const { db, dialect } = this.ctx;
    if (dialect.incrementalVacuum === undefined) return { kind: 'not_needed' };
    const mode = await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(db);
    const free = async () =>
      (await sql<{ freelist_count: number }>`pragma freelist_count`.execute(db)).rows[0]?.freelist_count ?? 0;
    const before = await free();
    if (before === 0) return { kind: 'not_needed' };
    if (mode.rows[0]?.auto_vacuum !== INCREMENTAL) return { kind: 'needs_vacuum', freePages: before };
    await dialect.incrementalVacuum(db, maxPages);
    const after = await free();
    return { kind: 'reclaimed', pages: before - after, freePagesLeft: after };
  }
}
