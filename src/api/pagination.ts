import { TokenProxyError } from '../errors/tokenproxy-error.js';
import type { Page, PageAfter, PageQuery } from '../store/records.js';
import { decodeCursor, encodeCursor } from './cursor.js';

const DEFAULT_LIMIT = 20;

/** `?limit=` (1–100, default 20; outside is a 400, not clamped — DESIGN §10) and `?cursor=`. */
export function pageQuery(query: { limit?: string | undefined; cursor?: string | undefined }): PageQuery {
  let limit = DEFAULT_LIMIT;
  if (query.limit !== undefined) {
    limit = /^\d{1,3}$/.test(query.limit) ? Number(query.limit) : NaN;
    if (!(limit >= 1 && limit <= 100)) {
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
