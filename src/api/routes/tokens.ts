import { audited } from '../audit.js';
import { Type, type Static } from 'typebox';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import {
  isId,
  isTokenId,
  newId,
  newSanitizedToken,
  newTokenId,
  realKeyHint,
  sanitizedKeyHint,
  secretDigest,
} from '../../ids/formats.js';
import { planLimits } from '../../accounts/plans.js';
import { tokenEvent } from '../../events/token-events.js';
import { TOKEN_STATUSES, type TokenRecord } from '../../store/records.js';
import type { TokenCreation } from '../../store/store.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { CreateTokenBody, CreatedTokenObject, IdParams, ListQuery, TokenObject, listOf } from '../schemas.js';
import { tokenView } from '../views.js';
import { requireProvider, sealRealKey } from './shared.js';
import {
  allowedHostsField,
  allowedIpsField,
  budgetField,
  expiresAtField,
  rateLimitField,
} from './token-fields.js';

const TAG = ['tokens'];

export function tokenRoutes(app: ApiServer, deps: ApiDeps): void {
  const tokenViewAt = (t: TokenRecord, now: Date) => tokenView(t, now, deps.publicProxyUrl);

  app.post(
    '/tokens',
    {
      schema: {
        tags: TAG,
        operationId: 'createToken',
        summary: 'Create a sanitized token',
        body: CreateTokenBody,
        response: { 201: CreatedTokenObject },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const account = request.account;
      const now = deps.now();
      const provider = requireProvider(deps, body.provider);
      const creation = validateCreation(body);

      const sanitized = newSanitizedToken();
      const tokenId = newTokenId();
      let key: TokenCreation['key'];
      if (body.real_key !== undefined) {
        const keyId = newId('key');
        key = {
          newKey: {
            id: keyId,
            accountId: account.id,
            name: body.name,
            provider: provider.id,
            hint: realKeyHint(body.real_key),
            ciphertext: await sealRealKey(deps, body.real_key, keyId, account.id),
            createdAt: now.toISOString(),
          },
        };
      } else {
        key = { existingKeyId: creation.keyId as string };
      }
      const token = await audited(deps, request, async (tx, audit) => {
        const created = await tx.tokens.create({
          token: {
            id: tokenId,
            accountId: account.id,
            name: body.name,
            provider: provider.id,
            digest: secretDigest(sanitized),
            hint: sanitizedKeyHint(sanitized),
            authorizedOrigins: creation.origins,
            authorizedIps: creation.ips,
            rateLimit: creation.rateLimit,
            budget: creation.budget,
            expiresAt: creation.expiresAt,
            createdAt: now.toISOString(),
          },
          key,
          maxActiveTokens: planLimits(deps.plans, account.plan).activeTokens,
        });
        await audit('token.created', created.id, tokenViewAt(created, now));
        return created;
      });
      deps.onCredentialsChanged?.();
      const view = tokenViewAt(token, now);
      return reply.code(201).send({ ...view, sanitized_key: sanitized });

      function validateCreation(b: Static<typeof CreateTokenBody>) {
        if (b.real_key !== undefined && b.key_id !== undefined) {
          throw new TokenProxyError('invalid_parameter', 'Give either "real_key" or "key_id", not both.', {
            param: 'key_id',
          });
        }
        if (b.real_key === undefined && b.key_id === undefined) {
          throw new TokenProxyError(
            'missing_parameter',
            'Missing "real_key": give the provider key to protect, or "key_id" of a key stored with POST /v1/keys.',
            { param: 'real_key' },
          );
        }
        if (b.key_id !== undefined && !isId('key', b.key_id)) {
          throw new TokenProxyError(
            'invalid_parameter',
            'Invalid field "key_id": expected an id like key_….',
            {
              param: 'key_id',
            },
          );
        }
        const origins = allowedHostsField(b.allowed_hosts);
        const ips = b.allowed_ips === undefined ? [] : allowedIpsField(b.allowed_ips);
        const rateLimit = b.rate_limit === undefined ? null : rateLimitField(b.rate_limit);
        const expiresAt =
          b.expires_at === undefined || b.expires_at === null ? null : expiresAtField(b.expires_at, now);
        const budget = b.budget === undefined ? null : budgetField(b.budget);
        return { origins, ips, rateLimit, expiresAt, budget, keyId: b.key_id };
      }
    },
  );

  app.get(
    '/tokens',
    {
      schema: {
        tags: TAG,
        operationId: 'listTokens',
        summary: 'List tokens, newest first',
        querystring: Type.Object(
          {
            ...ListQuery,
            status: Type.Optional(Type.Union(TOKEN_STATUSES.map((s) => Type.Literal(s)))),
          },
          { additionalProperties: false },
        ),
        response: { 200: listOf(TokenObject) },
      },
    },
    async (request) => {
      const now = deps.now();
      const page = await deps.store.tokens.list(
        request.account.id,
        { status: request.query.status, now: now.toISOString() },
        pageQuery(request.query),
      );
      return listBody(page, (t) => tokenViewAt(t, now));
    },
  );

  app.get(
    '/tokens/:id',
    {
      schema: {
        tags: TAG,
        operationId: 'getToken',
        summary: 'Get a token',
        params: IdParams,
        response: { 200: TokenObject },
      },
    },
    async (request) => {
      const token = isTokenId(request.params.id)
        ? await deps.store.tokens.get(request.account.id, request.params.id)
        : undefined;
      if (!token) throw tokenNotFound();
      return tokenViewAt(token, deps.now());
    },
  );

  app.delete(
    '/tokens/:id',
    {
      schema: {
        tags: TAG,
        operationId: 'revokeToken',
        summary: 'Revoke a token (idempotent)',
        params: IdParams,
        response: { 200: TokenObject },
      },
    },
    async (request) => {
      const now = deps.now();
      if (!isTokenId(request.params.id)) throw tokenNotFound();
      const tokenId = request.params.id;
      const result = await audited(deps, request, async (tx, audit) => {
        const revoked = await tx.tokens.revoke(
          request.account.id,
          tokenId,
          now.toISOString(),
          tokenEvent('token.revoked', now, deps.publicProxyUrl),
        );
        if (revoked?.changed === true) await audit('token.revoked', revoked.token.id);
        return revoked;
      });
      if (!result) throw tokenNotFound();
      deps.onCredentialsChanged?.();
      if (result.changed) deps.onEventsCommitted?.();
      return tokenViewAt(result.token, now);
    },
  );
}

export function tokenNotFound(): TokenProxyError {
  return new TokenProxyError('token_not_found', 'No token with this id in your account.', { param: 'id' });
}
