import { Type } from 'typebox';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { isSanitizedToken, isTokenId } from '../../ids/formats.js';
import { timestampPosition } from '../../store/records.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { ListQuery, RequestLogObject, listOf } from '../schemas.js';
import { requestLogView } from '../views.js';

export const TokenIdQuery = Type.Optional(Type.String({ description: 'only entries of this token_id' }));

/**
 * `?token_id=` must look like a token id. A typo would otherwise list nothing without a word, and
 * a sanitized token pasted here is a secret in a URL: say so.
 */
export function tokenIdFilter(value: string | undefined): string | undefined {
  if (value === undefined || isTokenId(value)) return value;
  const hint = isSanitizedToken(value)
    ? ' This is the sanitized token itself, a secret: filter by its token_id instead, and consider revoking it if this URL was shared.'
    : '';
  throw new TokenProxyError(
    'invalid_parameter',
    `Invalid query parameter "token_id": expected a token_id (43 base58 characters).${hint}`,
    { param: 'token_id' },
  );
}

export function logRoutes(app: ApiServer, deps: ApiDeps): void {
  app.get(
    '/logs',
    {
      schema: {
        tags: ['logs'],
        operationId: 'listLogs',
        summary: 'List request-log records, newest first',
        querystring: Type.Object(
          {
            ...ListQuery,
            token_id: TokenIdQuery,
            status: Type.Optional(
              Type.String({
                pattern: '^([1-5][0-9][0-9]|[1-5]xx)$',
                description: 'only records with this HTTP status (429) or class (4xx)',
              }),
            ),
            authorized: Type.Optional(
              Type.Union([Type.Literal('true'), Type.Literal('false')], {
                description: 'only records whose origin check passed (true) or failed (false)',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: listOf(RequestLogObject) },
      },
    },
    async (request) => {
      const { query } = request;
      const filter = {
        tokenId: tokenIdFilter(query.token_id),
        authorized: query.authorized === undefined ? undefined : query.authorized === 'true',
        status: statusRange(query.status),
      };
      const page = await deps.store.requestLogs.list(request.account.id, filter, pageQuery(query));
      return listBody(page, requestLogView, timestampPosition);
    },
  );
}

/** `429` → [429, 429]; `4xx` → [400, 499]. The pattern in the schema has already checked the form. */
export function statusRange(value: string | undefined): readonly [number, number] | undefined {
  if (value === undefined) return undefined;
  if (value.endsWith('xx')) {
    const base = Number(value[0]) * 100;
    return [base, base + 99];
  }
  return [Number(value), Number(value)];
}
