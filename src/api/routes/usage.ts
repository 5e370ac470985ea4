import type { ApiDeps, ApiServer } from '../context.js';
import { UsageObject, UsageQuery } from '../dashboard-schemas.js';
import { summarizeUsage, usageWindow } from '../usage-buckets.js';

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
        summary: 'Forwarded and refused requests over a window, in buckets',
        querystring: UsageQuery,
        response: { 200: UsageObject },
      },
    },
    async (request) => {
      const windowName = request.query.window ?? '24h';
      const bucketName = request.query.bucket ?? '1h';
      const window = usageWindow(deps.now(), windowName === '7d' ? 168 : 24, bucketName === '1d' ? 24 : 1);
      const rows = await deps.store.usageRollups.range(request.account.id, window.start, window.end);
      const summary = summarizeUsage(window, rows);
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
      };
    },
  );
}
