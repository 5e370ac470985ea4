import { audited } from '../audit.js';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { tokenEvent } from '../../events/token-events.js';
import { isId, newId, realKeyHint } from '../../ids/formats.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { CreateKeyBody, IdParams, KeyObject, ListQuery, RotateKeyBody, listOf } from '../schemas.js';
import { keyView } from '../views.js';
import { requireProvider, sealRealKey } from './shared.js';
import { Type } from 'typebox';

const TAG = ['keys'];

export function keyRoutes(app: ApiServer, deps: ApiDeps): void {
  app.post(
    '/keys',
    {
      schema: {
        tags: TAG,
        operationId: 'createKey',
        summary: 'Store a provider key',
        body: CreateKeyBody,
        response: { 201: KeyObject },
      },
    },
    async (request, reply) => {
      const { name, provider: providerId, real_key: realKey } = request.body;
      const provider = requireProvider(deps, providerId);
      const keyId = newId('key');
      // Sealed before the transaction: the KEK may be an HSM, and SQLite's write lock would wait on it.
      const ciphertext = await sealRealKey(deps, realKey, keyId, request.account.id);
      const key = await audited(deps, request, async (tx, audit) => {
        const created = await tx.keys.create({
          id: keyId,
          accountId: request.account.id,
          name,
          provider: provider.id,
          hint: realKeyHint(realKey),
          ciphertext,
          createdAt: deps.now().toISOString(),
        });
        await audit('key.created', created.id);
        return created;
      });
      return reply.code(201).send(keyView(key));
    },
  );

  app.get(
    '/keys',
    {
      schema: {
        tags: TAG,
        operationId: 'listKeys',
        summary: 'List provider keys, newest first',
        querystring: Type.Object(ListQuery, { additionalProperties: false }),
        response: { 200: listOf(KeyObject) },
      },
    },
    async (request) =>
      listBody(
        await deps.store.keys.list(request.account.id, pageQuery(request.query), deps.now().toISOString()),
        keyView,
      ),
  );

  app.get(
    '/keys/:id',
    {
      schema: {
        tags: TAG,
        operationId: 'getKey',
        summary: 'Get a provider key',
        params: IdParams,
        response: { 200: KeyObject },
      },
    },
    async (request) => {
      const key = isId('key', request.params.id)
        ? await deps.store.keys.get(request.account.id, request.params.id, deps.now().toISOString())
        : undefined;
      if (!key) throw keyNotFound();
      return keyView(key);
    },
  );

  app.post(
    '/keys/:id/rotate',
    {
      schema: {
        tags: TAG,
        operationId: 'rotateKey',
        summary: 'Replace the real key; tokens using it keep working',
        params: IdParams,
        body: RotateKeyBody,
        response: { 200: KeyObject },
      },
    },
    async (request) => {
      const { id } = request.params;
      if (!isId('key', id)) throw keyNotFound();
      const ciphertext = await sealRealKey(deps, request.body.real_key, id, request.account.id);
      const key = await audited(deps, request, async (tx, audit) => {
        const rotated = await tx.keys.rotate(request.account.id, id, {
          ciphertext,
          hint: realKeyHint(request.body.real_key),
          rotatedAt: deps.now().toISOString(),
        });
        if (rotated) await audit('key.rotated', rotated.id);
        return rotated;
      });
      if (!key) throw keyNotFound();
      deps.onCredentialsChanged?.();
      return keyView(key);
    },
  );

  app.delete(
    '/keys/:id',
    {
      schema: {
        tags: TAG,
        operationId: 'deleteKey',
        summary: 'Delete a provider key: destroys its ciphertext and revokes its tokens (idempotent)',
        params: IdParams,
        response: { 200: KeyObject },
      },
    },
    async (request) => {
      const { id } = request.params;
      const now = deps.now();
      if (!isId('key', id)) throw keyNotFound();
      const result = await audited(deps, request, async (tx, audit) => {
        const deletion = await tx.keys.delete(
          request.account.id,
          id,
          now.toISOString(),
          tokenEvent('token.revoked', now, deps.publicProxyUrl),
        );
        // A repeated DELETE changes nothing, so it is not a change to record.
        if (deletion?.key.deletedAt === now.toISOString()) await audit('key.deleted', id);
        return deletion;
      });
      if (!result) throw keyNotFound();
      deps.onCredentialsChanged?.();
      if (result.revokedTokens.length > 0) deps.onEventsCommitted?.();
      return keyView(result.key);
    },
  );
}

function keyNotFound(): TokenProxyError {
  return new TokenProxyError('key_not_found', 'No key with this id in your account.', { param: 'id' });
}
