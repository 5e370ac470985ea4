import { sql } from 'kysely';
import type { Spent, UsageModelRollup, UsageModelRollupRepo } from '../rollup-records.js';
import type { RepoContext } from './context.js';
import { transact } from './transact.js';

export class KyselyUsageModelRollupRepo implements UsageModelRollupRepo {
  constructor(private readonly ctx: RepoContext) {}

  async add(rollups: readonly UsageModelRollup[]): Promise<void> {
    // One global order, so two processes adding overlapping rows on PostgreSQL wait rather than deadlock.
    const rows = rollups
      .filter((r) => r.requests > 0)
      .sort(
        (a, b) =>
          order(a.accountId, b.accountId) ||
          order(a.hour, b.hour) ||
          order(a.tokenId, b.tokenId) ||
          order(a.model, b.model),
      );
    if (rows.length === 0) return;
    await transact(this.ctx.db, async (trx) => {
      for (const r of rows) {
        await trx
          .insertInto('usage_model_rollups')
          .values({
            account_id: r.accountId,
            hour: r.hour,
            token_id: r.tokenId,
            model: r.model,
            requests: r.requests,
            input_tokens: r.inputTokens,
            output_tokens: r.outputTokens,
            cost_micros: r.costMicros,
          })
          .onConflict((oc) =>
            oc.columns(['account_id', 'hour', 'token_id', 'model']).doUpdateSet({
              requests: sql<number>`usage_model_rollups.requests + excluded.requests`,
              input_tokens: sql<number>`usage_model_rollups.input_tokens + excluded.input_tokens`,
              output_tokens: sql<number>`usage_model_rollups.output_tokens + excluded.output_tokens`,
              cost_micros: sql<number>`usage_model_rollups.cost_micros + excluded.cost_micros`,
            }),
          )
          .execute();
      }
    });
  }

  async range(accountId: string, from: string, to: string, tokenId?: string): Promise<UsageModelRollup[]> {
    let query = this.ctx.db
      .selectFrom('usage_model_rollups')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('hour', '>=', from)
      .where('hour', '<', to);
    if (tokenId !== undefined) query = query.where('token_id', '=', tokenId);
    const rows = await query.orderBy('hour').orderBy('token_id').orderBy('model').execute();
    return rows.map((row) => ({
      accountId: row.account_id,
      hour: row.hour,
      tokenId: row.token_id,
      model: row.model,
      requests: row.requests,
      inputTokens: row.input_tokens,
      outputTokens: row.output_tokens,
      costMicros: row.cost_micros,
    }));
  }

  async spent(accountId: string, tokenId: string | null, from: string): Promise<Spent> {
    let query = this.ctx.db
      .selectFrom('usage_model_rollups')
      .select([
        sql<number | string | null>`sum(input_tokens + output_tokens)`.as('tokens'),
        sql<number | string | null>`sum(cost_micros)`.as('cost'),
      ])
      .where('account_id', '=', accountId)
      .where('hour', '>=', from);
    if (tokenId !== null) query = query.where('token_id', '=', tokenId);
    const row = await query.executeTakeFirst();
    return { tokens: Number(row?.tokens ?? 0), costMicros: Number(row?.cost ?? 0) };
  }
}

function order(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
