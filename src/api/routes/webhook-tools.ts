import { audited } from '../audit.js';
import { Type } from 'typebox';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { PING_EVENT_TYPE } from '../../events/publisher.js';
import { isId, newId } from '../../ids/formats.js';
import type { WebhookRecord } from '../../store/records.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { IdParams, WebhookObject } from '../schemas.js';
import { webhookView } from '../views.js';

/**
 * Operating webhook endpoints (issue 18): re-enable or disable one, send it a signed `ping`, send an
 * event again. Test pings and redeliveries go through the outbox like every event, so they are
 * signed, retried, leased and listed in the endpoint's deliveries exactly as real ones.
 */

const QueuedObject = Type.Object({
  delivery_id: Type.String(),
  webhook_id: Type.String(),
});

const TestResultObject = Type.Object({
  event_id: Type.String({ description: 'the ping event (type "ping"); its id is the webhook-id header' }),
  delivery_id: Type.String({ description: 'follow it in GET /v1/webhooks/:id/deliveries' }),
});

const RedeliveryObject = Type.Object({
  event_id: Type.String(),
  deliveries: Type.Array(QueuedObject, {
    description: 'one new delivery per endpoint; empty when no enabled endpoint subscribes to the type',
  }),
});

export function webhookToolRoutes(app: ApiServer, deps: ApiDeps): void {
  const found = async (accountId: string, id: string): Promise<WebhookRecord> => {
    const webhook = isId('webhook', id) ? await deps.store.webhooks.get(accountId, id) : undefined;
    if (!webhook) {
      throw new TokenProxyError('webhook_not_found', 'No webhook endpoint with this id in your account.', {
        param: 'id',
      });
    }
    return webhook;
  };
  const enabled = (webhook: WebhookRecord, param: string): void => {
    if (webhook.disabledAt === null) return;
    throw new TokenProxyError(
      'webhook_disabled',
      `Webhook endpoint ${webhook.id} is disabled (${webhook.disabledReason ?? 'no reason recorded'}). Re-enable it with PATCH /v1/webhooks/${webhook.id} {"enabled": true} once the receiver works.`,
      { param },
    );
  };

  app.patch(
    '/webhooks/:id',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'updateWebhook',
        summary: 'Enable or disable a webhook endpoint',
        params: IdParams,
        body: Type.Object(
          {
            enabled: Type.Boolean({
              description:
                'true re-enables a disabled endpoint (and clears failing_since); false stops deliveries to it',
            }),
          },
          { additionalProperties: false },
        ),
        response: { 200: WebhookObject },
      },
    },
    async (request) => {
      await found(request.account.id, request.params.id);
      const updated = await audited(deps, request, async (tx, audit) => {
        const webhook = await tx.webhookTools.setEnabled(
          request.account.id,
          request.params.id,
          request.body.enabled,
          deps.now().toISOString(),
        );
        if (webhook) await audit('webhook.updated', webhook.id);
        return webhook;
      });
      if (!updated)
        throw new TokenProxyError('webhook_not_found', 'No webhook endpoint with this id in your account.');
      return webhookView(updated);
    },
  );

  app.post(
    '/webhooks/:id/test',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'testWebhook',
        summary: 'Send a signed "ping" event to the endpoint (through the outbox, like any event)',
        params: IdParams,
        response: { 202: TestResultObject },
      },
    },
    async (request, reply) => {
      const webhook = await found(request.account.id, request.params.id);
      enabled(webhook, 'id');
      const now = deps.now().toISOString();
      const event = {
        id: newId('event'),
        accountId: request.account.id,
        type: PING_EVENT_TYPE,
        createdAt: now,
        data: { webhook_id: webhook.id, message: 'Test event sent by POST /v1/webhooks/:id/test.' },
      };
      const [queued] = await audited(deps, request, async (tx, audit) => {
        const deliveries = await tx.webhookTools.enqueue(request.account.id, event, [webhook.id], now);
        await audit('webhook.tested', webhook.id);
        return deliveries;
      });
      deps.onEventsCommitted?.();
      return reply.code(202).send({ event_id: event.id, delivery_id: queued?.deliveryId ?? '' });
    },
  );

  app.post(
    '/events/:id/redeliver',
    {
      schema: {
        tags: ['events'],
        operationId: 'redeliverEvent',
        summary: 'Send an event again: to one endpoint, or to every enabled endpoint subscribed to its type',
        params: IdParams,
        querystring: Type.Object(
          {
            webhook_id: Type.Optional(
              Type.String({
                description:
                  'only this endpoint (it need not subscribe to the type); without it, every enabled endpoint subscribed to the type',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 202: RedeliveryObject },
      },
    },
    async (request, reply) => {
      const accountId = request.account.id;
      const { id } = request.params;
      const event = isId('event', id) ? await deps.store.webhookTools.getEvent(accountId, id) : undefined;
      if (!event) {
        throw new TokenProxyError(
          'event_not_found',
          'No event with this id in your account (events older than log_retention are deleted).',
          { param: 'id' },
        );
      }
      const only = request.query.webhook_id;
      let targets: readonly string[];
      if (only === undefined) targets = await deps.store.webhookTools.subscribers(accountId, event.type);
      else {
        const webhook = await found(accountId, only).catch((err: unknown) => {
          if (err instanceof TokenProxyError) {
            throw new TokenProxyError(
              'webhook_not_found',
              'No webhook endpoint with this id in your account.',
              {
                param: 'webhook_id',
              },
            );
          }
          throw err;
        });
        enabled(webhook, 'webhook_id');
        targets = [webhook.id];
      }
      const now = deps.now().toISOString();
      const queued = await audited(deps, request, async (tx, audit) => {
        const deliveries = await tx.webhookTools.enqueue(
          accountId,
          { existingEventId: event.id },
          targets,
          now,
        );
        await audit('event.redelivered', event.id);
        return deliveries;
      });
      if (queued.length > 0) deps.onEventsCommitted?.();
      return reply.code(202).send({
        event_id: event.id,
        deliveries: queued.map((q) => ({ delivery_id: q.deliveryId, webhook_id: q.webhookId })),
      });
    },
  );
}
