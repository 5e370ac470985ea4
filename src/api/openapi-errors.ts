import { Type, type TSchema } from 'typebox';
import { IDEMPOTENT_METHODS } from './idempotency.js';
import { ErrorBody } from './schemas.js';

/**
 * The error statuses each management operation can answer, for its OpenAPI `responses`: every
 * one described by the one error schema (DESIGN §5). Derived from the route's shape so a new route
 * is described without a list to keep up to date; `EXTRA` holds what the shape cannot tell.
 */

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: a parameter, field or body is wrong; `param` names it',
  401: 'Missing or invalid API key',
  403: 'Not allowed: a read-only API key (insufficient_scope), a plan limit (plan_limit_exceeded), a plan change (plan_change_forbidden), or a dashboard session without its Origin (csrf_rejected)',
  404: 'No such object in your account',
  409: 'Conflict (Idempotency-Key reused or in progress, or the key was deleted)',
  413: 'Body larger than 1 MB',
  415: 'Body not sent as application/json',
  500: 'Internal error; the request id finds the log line',
  503: 'Database unavailable; retry shortly',
};

/** Statuses a route's shape does not show: `METHOD /v1/path` → extra statuses. */
const EXTRA: Record<string, readonly number[]> = {
  // A key_id that is not in the account.
  'POST /v1/tokens': [404],
};

export interface RouteShape {
  readonly method: string;
  readonly url: string;
  readonly hasBody: boolean;
  readonly hasParams: boolean;
}

export function errorStatuses(route: RouteShape): number[] {
  const statuses = new Set<number>([400, 401, 500, 503]);
  if (route.hasBody) {
    statuses.add(413);
    statuses.add(415);
  }
  if (route.hasParams) statuses.add(404);
  // Idempotency-Key replays and conflicts (every POST and DELETE), deleted keys (rotate).
  if (IDEMPOTENT_METHODS.has(route.method)) statuses.add(409);
  // Every change: a read-only key is refused (insufficient_scope), and so is a dashboard session
  // without its own Origin (csrf_rejected).
  if (route.method !== 'GET') statuses.add(403);
  for (const status of EXTRA[`${route.method} ${route.url}`] ?? []) statuses.add(status);
  return [...statuses].sort((a, b) => a - b);
}

export function errorResponses(route: RouteShape): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const status of errorStatuses(route)) {
    out[status] = Type.Unsafe({ ...ErrorBody, description: DESCRIPTIONS[status] ?? 'Error' });
  }
  return out;
}

/** The header the POST and DELETE routes accept (src/api/idempotency.ts checks its value). */
export const IdempotencyHeaders = Type.Object({
  'Idempotency-Key': Type.Optional(
    Type.String({
      description:
        'Makes a retry safe: the same key (1 to 255 printable ASCII characters, such as a UUID) returns the first answer for 24 hours.',
    }),
  ),
});
