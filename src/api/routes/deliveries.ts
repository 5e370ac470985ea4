import { Type } from 'typebox';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { isId } from '../../ids/formats.js';
import type { DeliveryRecord } from '../../store/store.js';
import type { DeliveryAttempt } from '../../store/webhook-tool-records.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { IdParams, ListQuery, Timestamp, listOf } from '../schemas.js';

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
  attempt_log: Type.Array(
    Type.Object({
      attempt: Type.Integer(),
      attempted_at: Timestamp,
      status_code: Type.Union([Type.Integer(), Type.Null()], {
        description: "the receiver's HTTP status; null when none came",
      }),
      duration_ms: Type.Integer(),
      error_class: Type.Union(
        [
          Type.Literal('http_status'),
          Type.Literal('timeout'),
          Type.Literal('connection'),
          Type.Literal('dns'),
          Type.Literal('refused'),
          Type.Literal('other'),
          Type.Null(),
        ],
        { description: 'why the attempt failed; null when it succeeded' },
      ),
    }),
    { description: 'each attempt, oldest first: never a response body' },
  ),
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
      const attempts = await deps.store.webhookTools.attempts(page.items.map((d) => d.id));
      return listBody(page, (d) => deliveryView(d, attempts.get(d.id) ?? []));
    },
  );
}

function deliveryView(d: DeliveryRecord, attempts: readonly DeliveryAttempt[]) {
  return {
    delivery_id: d.id,
    event_id: d.eventId,
    event_type: d.eventType,
    status: d.status,
    attempts: d.attempts,
    last_error: d.lastError,
    created_at: d.createdAt,
    completed_at: d.completedAt,
    attempt_log: attempts.map((a) => ({
      attempt: a.attempt,
      attempted_at: a.attemptedAt,
      status_code: a.statusCode,
      duration_ms: a.durationMs,
      error_class: a.errorClass,
    })),
  };
}
