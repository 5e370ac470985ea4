import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { apiKeyStart, isId, newApiKey, newId, secretDigest } from '../../ids/formats.js';
import type { ApiKeyRecord } from '../../store/access-records.js';
import { audited } from '../audit.js';
import { ApiKeyObject, CreateApiKeyBody, CreatedApiKeyObject } from '../access-schemas.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { IdParams, ListQuery, listOf } from '../schemas.js';
import { Type } from 'typebox';

const TAG = ['api_keys'];

/**
 * The account's own API keys (issue 18): several, named, optionally read-only. A key is shown once,
 * at creation; the store keeps its SHA-256 digest. Deleting a key ends it at once in every process
 * (each request looks its key up). Deleting the last full key locks the account out of the API
 * until the operator runs `tokenproxy accounts rotate-key`.
 */
export function apiKeyRoutes(app: ApiServer, deps: ApiDeps): void {
  app.post(
    '/api_keys',
    {
      schema: {
        tags: TAG,
        operationId: 'createApiKey',
        summary: 'Create an API key for the account (shown once)',
        body: CreateApiKeyBody,
        response: { 201: CreatedApiKeyObject },
      },
    },
    async (request, reply) => {
      const secret = newApiKey();
      const key = await audited(deps, request, async (tx, audit) => {
        const created = await tx.apiKeys.create({
          id: newId('apiKey'),
          accountId: request.account.id,
          name: request.body.name,
          scope: request.body.scope ?? 'full',
          digest: secretDigest(secret),
          start: apiKeyStart(secret),
          createdAt: deps.now().toISOString(),
        });
        await audit('api_key.created', created.id, apiKeyView(created));
        return created;
      });
      return reply.code(201).send({ ...apiKeyView(key), api_key: secret });
    },
  );

  app.get(
    '/api_keys',
    {
      schema: {
        tags: TAG,
        operationId: 'listApiKeys',
        summary: 'List the live API keys of the account, newest first',
        querystring: Type.Object({ ...ListQuery }, { additionalProperties: false }),
        response: { 200: listOf(ApiKeyObject) },
      },
    },
    async (request) => {
      const page = await deps.store.apiKeys.list(request.account.id, pageQuery(request.query));
      return listBody(page, apiKeyView);
    },
  );

  app.delete(
    '/api_keys/:id',
    {
      schema: {
        tags: TAG,
        operationId: 'deleteApiKey',
        summary: 'Delete an API key: it stops working at once',
        params: IdParams,
        response: { 200: ApiKeyObject },
      },
    },
    async (request) => {
      const keyId = request.params.id;
      const key = isId('apiKey', keyId)
        ? await audited(deps, request, async (tx, audit) => {
            const revoked = await tx.apiKeys.revoke(request.account.id, keyId, deps.now().toISOString());
            if (revoked) await audit('api_key.deleted', revoked.id, apiKeyView(revoked));
            return revoked;
          })
        : undefined;
      if (!key) {
        throw new TokenProxyError('api_key_not_found', 'No live API key with this id in your account.', {
          param: 'id',
        });
      }
      return apiKeyView(key);
    },
  );
}

export function apiKeyView(key: ApiKeyRecord) {
  return { id: key.id, name: key.name, scope: key.scope, start: key.start, created_at: key.createdAt };
}
