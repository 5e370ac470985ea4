import { quote } from '../../rules/text.js';
import { Type } from 'typebox';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { REQUEST_ID_PREFIX, isSanitizedToken, isTokenId } from '../../ids/formats.js';
import { timestampPosition } from '../../store/records.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { ListQuery, RequestLogObject, listOf } from '../schemas.js';
import { errorCodeParam, ipParam, timeRange } from './log-filters.js';
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
            since: Type.Optional(
              Type.String({
                description: 'only records at or after this ISO 8601 time (2026-05-01T00:00:00Z)',
              }),
            ),
            until: Type.Optional(Type.String({ description: 'only records before this ISO 8601 time' })),
            error_code: Type.Optional(
              Type.String({
                description: 'only records refused or failed with this error code (docs/errors.md)',
              }),
            ),
            ip: Type.Optional(
              Type.String({ description: 'only records from this client IPv4 or IPv6 address' }),
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
        ...timeRange(query.since, query.until),
        errorCode: errorCodeParam(query.error_code),
        ip: ipParam(query.ip),
      };
      const page = await deps.store.requestLogs.list(request.account.id, filter, pageQuery(query));
      return listBody(page, requestLogView, timestampPosition);
    },
  );

  app.get(
    '/logs/:id',
    {
      schema: {
        tags: ['logs'],
        operationId: 'getLog',
        summary: 'One request-log record, by the request id the caller got in x-tokenproxy-request-id',
        params: Type.Object({
          id: Type.String({ description: 'the request id (req_…) from the x-tokenproxy-request-id header' }),
        }),
        response: { 200: RequestLogObject },
      },
    },
    async (request) => {
      const { id } = request.params;
      const entry = id.startsWith(REQUEST_ID_PREFIX)
        ? await deps.store.requestLogs.get(request.account.id, id)
        : undefined;
      if (entry === undefined) {
        throw new TokenProxyError(
          'request_log_not_found',
          `No request-log record with id ${quote(id, 60)} in your account. Request ids start with "req_" (the x-tokenproxy-request-id response header); records are kept for log_retention (GET /v1/account shows it) and are stored a moment after the request.`,
          { param: 'id' },
        );
      }
      return requestLogView(entry);
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
