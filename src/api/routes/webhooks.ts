import { audited } from '../audit.js';
import { Type } from 'typebox';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { checkWebhookHost, checkWebhookUrl, systemResolver } from '../../events/address-guard.js';
import { EVENT_TYPES } from '../../events/publisher.js';
import { formatWebhookSecret, newWebhookSecretKey } from '../../events/webhook-signer.js';
import { isId, newId } from '../../ids/formats.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import {
  CreateWebhookBody,
  CreatedWebhookObject,
  IdParams,
  ListQuery,
  WebhookObject,
  listOf,
} from '../schemas.js';
import { webhookView } from '../views.js';

const TAG = ['webhooks'];
const HOST_CHECK_TIMEOUT_MS = 2000;
const KNOWN_TYPES: readonly string[] = EVENT_TYPES;

export function webhookRoutes(app: ApiServer, deps: ApiDeps): void {
  const allowPrivate = deps.allowPrivateWebhooks ?? false;

  app.post(
    '/webhooks',
    {
      schema: {
        tags: TAG,
        operationId: 'createWebhook',
        summary: 'Add a webhook endpoint; the signing secret is returned only here',
        body: CreateWebhookBody,
        response: { 201: CreatedWebhookObject },
      },
    },
    async (request, reply) => {
      const events = validateEvents(request.body.events);
      const syntax = checkWebhookUrl(request.body.url, allowPrivate);
      const checked = syntax.ok
        ? await checkWebhookHost(syntax.url, {
            allowPrivate,
            resolver: deps.resolveWebhookHost ?? systemResolver,
            timeoutMs: HOST_CHECK_TIMEOUT_MS,
          })
        : syntax;
      if (!checked.ok) {
        throw new TokenProxyError('invalid_parameter', `Invalid field "url": ${checked.message}`, {
          param: 'url',
        });
      }
      const id = newId('webhook');
      const accountId = request.account.id;
      const key = newWebhookSecretKey();
      try {
        const secret = await deps.vault.encrypt(key, { keyId: id, accountId });
        const webhook = await audited(deps, request, async (tx, audit) => {
          const created = await tx.webhooks.create({
            id,
            accountId,
            url: checked.url.href,
            events,
            secret,
            createdAt: deps.now().toISOString(),
          });
          await audit('webhook.created', created.id);
          return created;
        });
        return await reply.code(201).send({ ...webhookView(webhook), secret: formatWebhookSecret(key) });
      } finally {
        key.fill(0);
      }
    },
  );

  app.get(
    '/webhooks',
    {
      schema: {
        tags: TAG,
        operationId: 'listWebhooks',
        summary: 'List webhook endpoints, newest first',
        querystring: Type.Object(ListQuery, { additionalProperties: false }),
        response: { 200: listOf(WebhookObject) },
      },
    },
    async (request) =>
      listBody(await deps.store.webhooks.list(request.account.id, pageQuery(request.query)), webhookView),
  );

  app.get(
    '/webhooks/:id',
    {
      schema: {
        tags: TAG,
        operationId: 'getWebhook',
        summary: 'Get a webhook endpoint',
        params: IdParams,
        response: { 200: WebhookObject },
      },
    },
    async (request) => {
      const webhook = isId('webhook', request.params.id)
        ? await deps.store.webhooks.get(request.account.id, request.params.id)
        : undefined;
      if (!webhook) throw webhookNotFound();
      return webhookView(webhook);
    },
  );

  app.delete(
    '/webhooks/:id',
    {
      schema: {
        tags: TAG,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook endpoint and drop its pending deliveries',
        params: IdParams,
        response: { 200: WebhookObject },
      },
    },
    async (request) => {
      const webhookId = request.params.id;
      const webhook = isId('webhook', webhookId)
        ? await audited(deps, request, async (tx, audit) => {
            const deleted = await tx.webhooks.delete(request.account.id, webhookId);
            if (deleted) await audit('webhook.deleted', deleted.id);
            return deleted;
          })
        : undefined;
      if (!webhook) throw webhookNotFound();
      return webhookView(webhook);
    },
  );
}

/** A non-empty list of known types, or `["*"]` alone. Duplicates are dropped, first kept. */
function validateEvents(events: readonly string[]): string[] {
  if (events.length === 0) {
    throw new TokenProxyError(
      'invalid_parameter',
      'Invalid field "events": give at least one event type, or ["*"] for all.',
      { param: 'events' },
    );
  }
  const seen = new Set<string>();
  for (const [index, type] of events.entries()) {
    if (type === '*') {
      if (events.length > 1) {
        throw new TokenProxyError(
          'invalid_parameter',
          'Invalid field "events": "*" means every event type and must be the only entry.',
          { param: `events[${index}]` },
        );
      }
    } else if (!KNOWN_TYPES.includes(type)) {
      throw new TokenProxyError(
        'invalid_parameter',
        `Invalid field "events[${index}]": unknown event type "${type.slice(0, 100)}". Known types: ${KNOWN_TYPES.join(', ')}, or "*" for all.`,
        { param: `events[${index}]` },
      );
    }
    seen.add(type);
  }
  return [...seen];
}

function webhookNotFound(): TokenProxyError {
  return new TokenProxyError('webhook_not_found', 'No webhook endpoint with this id in your account.', {
    param: 'id',
  });
}
