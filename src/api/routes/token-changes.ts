import { audited } from '../audit.js';
import { tokenEvent } from '../../events/token-events.js';
import { isTokenId } from '../../ids/formats.js';
import type { TokenPatch } from '../../store/store.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { PatchTokenBody } from '../dashboard-schemas.js';
import { IdParams, TokenObject, listOf } from '../schemas.js';
import { tokenView } from '../views.js';
import {
  allowedHostsField,
  allowedIpsField,
  budgetField,
  expiresAtField,
  rateLimitField,
} from './token-fields.js';
import { tokenNotFound } from './tokens.js';

const TAG = ['tokens'];

/** PATCH /v1/tokens/:id and POST /v1/tokens/revoke_all (DESIGN §12): both take effect on the next request. */
export function tokenChangeRoutes(app: ApiServer, deps: ApiDeps): void {
  app.patch(
    '/tokens/:id',
    {
      schema: {
        tags: TAG,
        operationId: 'updateToken',
        summary: 'Edit a token: name, allowed hosts and IPs, rate limit, expiry',
        params: IdParams,
        body: PatchTokenBody,
        response: { 200: TokenObject },
      },
    },
    async (request) => {
      const now = deps.now();
      const b = request.body;
      // Checked before the lookup, so a bad value is reported even for an unknown id.
      const patch: TokenPatch = {
        name: b.name,
        authorizedOrigins: b.allowed_hosts === undefined ? undefined : allowedHostsField(b.allowed_hosts),
        authorizedIps: b.allowed_ips === undefined ? undefined : allowedIpsField(b.allowed_ips),
        rateLimit:
          b.rate_limit === undefined
            ? undefined
            : b.rate_limit === null
              ? null
              : rateLimitField(b.rate_limit),
        expiresAt:
          b.expires_at === undefined
            ? undefined
            : b.expires_at === null
              ? null
              : expiresAtField(b.expires_at, now),
        budget: b.budget === undefined ? undefined : budgetField(b.budget),
      };
      const tokenId = request.params.id;
      const token = isTokenId(tokenId)
        ? await audited(deps, request, async (tx, audit) => {
            const updated = await tx.tokens.update(request.account.id, tokenId, patch, now.toISOString());
            if (updated)
              await audit('token.updated', updated.id, tokenView(updated, now, deps.publicProxyUrl));
            return updated;
          })
        : undefined;
      if (!token) throw tokenNotFound();
      deps.onCredentialsChanged?.();
      return tokenView(token, now, deps.publicProxyUrl);
    },
  );

  app.post(
    '/tokens/revoke_all',
    {
      schema: {
        tags: TAG,
        operationId: 'revokeAllTokens',
        summary: 'Revoke every active token of the account (the kill switch)',
        response: { 200: listOf(TokenObject) },
      },
    },
    async (request) => {
      const now = deps.now();
      const revoked = await audited(deps, request, async (tx, audit) => {
        const tokens = await tx.tokens.revokeAll(
          request.account.id,
          now.toISOString(),
          tokenEvent('token.revoked', now, deps.publicProxyUrl),
        );
        await audit('token.revoked_all', request.account.id);
        return tokens;
      });
      deps.onCredentialsChanged?.();
      if (revoked.length > 0) deps.onEventsCommitted?.();
      return {
        object: 'list' as const,
        data: revoked.map((t) => tokenView(t, now, deps.publicProxyUrl)),
        has_more: false,
        next_cursor: null,
      };
    },
  );
}
