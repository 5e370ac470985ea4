import type { PageAfter } from '../store/records.js';

/**
 * List cursors are opaque to clients: base64url of `<created_at>|<id>` of the last item returned.
 * Decoding is strict so a tampered or truncated cursor is a clear 400, not a wrong page.
 */
export function encodeCursor(after: PageAfter): string {
  return Buffer.from(`${after.createdAt}|${after.id}`, 'utf8').toString('base64url');
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ID = /^[A-Za-z0-9_]{1,80}$/;

export function decodeCursor(cursor: string): PageAfter | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const sep = text.indexOf('|');
  if (sep < 0) return undefined;
  const createdAt = text.slice(0, sep);
  const id = text.slice(sep + 1);
  if (!ISO_MS.test(createdAt) || !ID.test(id)) return undefined;
  // An instant this API could have written: "9999-99-99T…" has the shape and no such day.
  const ms = Date.parse(createdAt);
  if (Number.isNaN(ms) || new Date(ms).toISOString() !== createdAt) return undefined;
  return { createdAt, id };
}
