import { Type } from 'typebox';
import { timestampPosition } from '../../store/records.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { AnomalyObject, ListQuery, listOf } from '../schemas.js';
import { anomalyView } from '../views.js';
import { TokenIdQuery, tokenIdFilter } from './logs.js';

export function anomalyRoutes(app: ApiServer, deps: ApiDeps): void {
  app.get(
    '/anomalies',
    {
      schema: {
        tags: ['anomalies'],
        operationId: 'listAnomalies',
        summary: 'List the anomaly log (unauthorized requests and anomalous usage), newest first',
        querystring: Type.Object({ ...ListQuery, token_id: TokenIdQuery }, { additionalProperties: false }),
        response: { 200: listOf(AnomalyObject) },
      },
    },
    async (request) => {
      const { query } = request;
      const page = await deps.store.anomalies.list(
        request.account.id,
        { tokenId: tokenIdFilter(query.token_id) },
        pageQuery(query),
      );
      return listBody(page, anomalyView, timestampPosition);
    },
  );
}
