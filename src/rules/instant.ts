/**
 * The instants the store can keep. Timestamps are stored as ISO 8601 text in UTC and compared as
 * text (expiry, cursors, time ranges), which orders them only while the year has four digits:
 * `new Date('9999-12-31T23:59:59-10:00').toISOString()` is "+010000-01-01T09:59:59.000Z", which
 * sorts before "2026-…" and so reads as long past.
 */
export const LATEST_INSTANT = '9999-12-31T23:59:59.999Z';
const LATEST_MS = Date.parse(LATEST_INSTANT);

/** The instant's stored text, or undefined when it falls outside 1970 … 9999 (UTC). */
export function storedInstant(ms: number): string | undefined {
  return ms >= 0 && ms <= LATEST_MS ? new Date(ms).toISOString() : undefined;
}
