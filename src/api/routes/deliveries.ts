import { Type } from 'typebox';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { isId } from '../../ids/formats.js';
import type { DeliveryRecord } from '../../store/dashboard-records.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { IdParams, ListQuery, listOf } from '../schemas.js';

const Timestamp = Type.String({ format: 'date-time' });

export const DeliveryObject = Type.Object({
  delivery_id: Type.String(),
  event_id: Type.String(),
  event_type: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  last_error: Type.Union([Type.String(), Type.Null()], {
    description: 'why the last attempt failed (status code or network error), null after success',
  }),
  created_at: Timestamp,
  completed_at: Type.Union([Timestamp, Type.Null()]),
});

/** GET /v1/webhooks/:id/deliveries: what happened to recent events sent to an endpoint (Webhooks view). */
export function deliveryRoutes(app: ApiServer, deps: ApiDeps): void {
  app.get(
    '/webhooks/:id/deliveries',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhookDeliveries',
        summary: 'Deliveries to a webhook endpoint and their outcome, newest first',
        params: IdParams,
        querystring: Type.Object(ListQuery, { additionalProperties: false }),
        response: { 200: listOf(DeliveryObject) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const webhook = isId('webhook', id) ? await deps.store.webhooks.get(request.account.id, id) : undefined;
      if (!webhook) {
        throw new TokenProxyError('webhook_not_found', 'No webhook endpoint with this id in your account.', {
          param: 'id',
        });
      }
      const page = await deps.store.deliveries.listForWebhook(
        request.account.id,
        id,
        pageQuery(request.query),
      );
      return listBody(page, deliveryView);
    },
  );
}

function deliveryView(d: DeliveryRecord) {
  return {
    delivery_id: d.id,
    event_id: d.eventId,
    event_type: d.eventType,
    status: d.status,
    attempts: d.attempts,
    last_error: d.lastError,
    created_at: d.createdAt,
    completed_at: d.completedAt,
  };
}
