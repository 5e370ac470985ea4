/**
 * How long stored history is kept (`log_retention`, `rollup_retention`). These run to months or
 * years, past the ~24.8-day ceiling of timer durations (src/rules/duration.ts), so they have their own
 * small grammar: a whole number of hours or days, or `forever` (nothing is deleted).
 */

export type RetentionPeriod =
  | { readonly ok: true; readonly ms: number | null; readonly canonical: string }
  | { readonly ok: false; readonly message: string };

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const MAX_DAYS = 36_500;
const FORM = /^([1-9][0-9]{0,6}) ?(h|hours?|d|days?)$/i;

export const RETENTION_FORMS =
  'a whole number of hours or days such as "48h", "30d" or "400 days" (at least 1h, at most 36500d), or "forever"';

export function parseRetentionPeriod(text: string): RetentionPeriod {
  const trimmed = text.trim();
  if (trimmed.toLowerCase() === 'forever') return { ok: true, ms: null, canonical: 'forever' };
  const match = FORM.exec(trimmed);
  if (match === null) return { ok: false, message: `expected ${RETENTION_FORMS}` };
  const count = Number(match[1]);
  const perUnit = match[2]?.toLowerCase().startsWith('h') ? HOUR : DAY;
  const ms = count * perUnit;
  if (ms > MAX_DAYS * DAY) return { ok: false, message: `too long: expected ${RETENTION_FORMS}` };
  return { ok: true, ms, canonical: ms % DAY === 0 ? `${ms / DAY}d` : `${ms / HOUR}h` };
}

/** A validated retention setting: `ms` null means `forever`; `text` is its canonical spelling. */
export interface Retention {
  readonly ms: number | null;
  readonly text: string;
}
