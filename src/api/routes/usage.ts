import type { ApiDeps, ApiServer } from '../context.js';
import { UsageObject, UsageQuery } from '../dashboard-schemas.js';
import { summarizeUsage, usageWindow } from '../usage-buckets.js';
import { budgetStatuses, summarizeSpend } from '../usage-spend.js';

/**
 * GET /v1/usage: forwarded and refused requests per hour (or day) and refusals by reason, from the
 * per-hour rollups kept as the request log is written: a few hundred rows at most, never a scan of
 * the request log.
 */
export function usageRoutes(app: ApiServer, deps: ApiDeps): void {
  app.get(
    '/usage',
    {
      schema: {
        tags: ['usage'],
        operationId: 'getUsage',
        summary:
          'Requests, provider tokens and cost over a window, in buckets, by token and model; spend against budgets',
        querystring: UsageQuery,
        response: { 200: UsageObject },
      },
    },
    async (request) => {
      const windowName = request.query.window ?? '24h';
      const bucketName = request.query.bucket ?? '1h';
      const window = usageWindow(deps.now(), windowName === '7d' ? 168 : 24, bucketName === '1d' ? 24 : 1);
      const accountId = request.account.id;
      const [rows, spendRows, budgeted] = await Promise.all([
        deps.store.usageRollups.range(accountId, window.start, window.end),
        deps.store.usageModelRollups.range(accountId, window.start, window.end),
        deps.store.tokens.withBudgets(accountId),
      ]);
      const summary = summarizeUsage(window, rows);
      const budgets = await budgetStatuses(
        deps.store.usageModelRollups,
        request.account,
        budgeted,
        deps.now().getTime(),
      );
      return {
        object: 'usage' as const,
        window: windowName,
        bucket: bucketName,
        start: window.start,
        end: window.end,
        forwarded: summary.forwarded,
        refused: summary.refused,
        refused_by_reason: summary.refusedByReason,
        buckets: summary.buckets,
        spend: summarizeSpend(window, spendRows),
        budgets,
      };
    },
  );
}
