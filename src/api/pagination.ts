import { TokenProxyError } from '../errors/tokenproxy-error.js';
import type { Page, PageAfter, PageQuery } from '../store/records.js';
import { decodeCursor, encodeCursor } from './cursor.js';

const DEFAULT_LIMIT = 20;

/** `?limit=` (1–100, default 20; outside is a 400, not clamped — DESIGN §10) and `?cursor=`. */
export function pageQuery(query: { limit?: number | undefined; cursor?: string | undefined }): PageQuery {
  let limit = DEFAULT_LIMIT;
  if (query.limit !== undefined) {
    limit = query.limit;
    if (!(Number.isInteger(limit) && limit >= 1 && limit <= 100)) {
      throw new TokenProxyError(
        'invalid_parameter',
        'Query parameter "limit" must be an integer from 1 to 100.',
        {
          param: 'limit',
        },
      );
    }
  }
  if (query.cursor === undefined) return { limit };
  const after = decodeCursor(query.cursor);
  if (!after) {
    throw new TokenProxyError(
      'invalid_cursor',
      'Query parameter "cursor" is not a cursor this API returned.',
      {
        param: 'cursor',
      },
    );
  }
  return { limit, after };
}

export interface ListBody<V> {
  object: 'list';
  data: V[];
  has_more: boolean;
  next_cursor: string | null;
}

/** The list shape of DESIGN §5. Records without `createdAt` say where they sit with `position`. */
export function listBody<R extends PageAfter, V>(page: Page<R>, view: (record: R) => V): ListBody<V>;
export function listBody<R, V>(
  page: Page<R>,
  view: (record: R) => V,
  position: (record: R) => PageAfter,
): ListBody<V>;
export function listBody<R, V>(
  page: Page<R>,
  view: (record: R) => V,
  position: (record: R) => PageAfter = (record) => record as PageAfter,
): ListBody<V> {
  const last = page.items.at(-1);
  return {
    object: 'list',
    data: page.items.map(view),
    has_more: page.hasMore,
    next_cursor: page.hasMore && last !== undefined ? encodeCursor(position(last)) : null,
  };
}

/**
 * `?limit=` arrives as text; a whole number, signed or of any length, becomes the number the schema
 * (and the OpenAPI document) says it is, so `-1` and `99999999999999999999` are told the range
 * (1 to 100) rather than "expected integer". Anything else stays text and fails validation as
 * "expected integer". Runs as a preValidation hook: types are deliberately not coerced anywhere
 * else ("5" is not 5 in a body).
 */
export function coerceLimit(query: unknown): void {
  const q = query as Record<string, unknown> | null;
  if (q !== null && typeof q === 'object' && typeof q.limit === 'string' && /^-?\d+$/.test(q.limit)) {
    q.limit = Number(q.limit);
  }
}
