import { quote } from './text.js';

/**
 * Durations written by people: rate-limit windows (`15 minutes`, `1h`) and server timeouts
 * (`drain_timeout=10s`). Grammar: a whole number, an optional single space, a unit; case-insensitive.
 * `canonical` is the shortest exact spelling (`60s` → `1m`, `15 minutes` → `15m`, `90s` stays `90s`).
 */

export type DurationResult = { ok: true; ms: number; canonical: string } | { ok: false; message: string };

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const UNITS: ReadonlyMap<string, number> = new Map([
  ...['ms', 'msec', 'msecs', 'millisecond', 'milliseconds'].map((u) => [u, 1] as const),
  ...['s', 'sec', 'secs', 'second', 'seconds'].map((u) => [u, SECOND] as const),
  ...['m', 'min', 'mins', 'minute', 'minutes'].map((u) => [u, MINUTE] as const),
  ...['h', 'hr', 'hrs', 'hour', 'hours'].map((u) => [u, HOUR] as const),
  ...['d', 'day', 'days'].map((u) => [u, DAY] as const),
]);

/** Largest first, so the first exact divisor gives the shortest canonical spelling. */
const CANONICAL_UNITS: readonly (readonly [string, number])[] = [
  ['d', DAY],
  ['h', HOUR],
  ['m', MINUTE],
  ['s', SECOND],
  ['ms', 1],
];

const DURATION = /^([0-9]{1,15}) ?([a-z]+)$/i;

export const MIN_WINDOW_MS = SECOND;
export const MAX_WINDOW_MS = 31 * DAY;
/** Timers beyond 2^31-1 ms fire at once in Node, so longer timeouts are refused rather than broken. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

const WINDOW_FORMS =
  'use a positive whole number and a unit, e.g. "30s", "1m", "15 minutes", "1h", "1d" ' +
  '(units: s/sec/seconds, m/min/minutes, h/hr/hours, d/day/days; from 1 second to 31 days)';

/** A rate-limit window: at least 1 s (finer windows are not meaningful per token), at most 31 days. */
export function parseWindow(text: string, label = 'rate_limit.window'): DurationResult {
  const parsed = parse(text);
  if (parsed === undefined || parsed.unit === 1)
    return { ok: false, message: `${label} ${quote(text, 40)} is not valid: ${WINDOW_FORMS}` };
  if (parsed.ms < MIN_WINDOW_MS || parsed.ms > MAX_WINDOW_MS) {
    return { ok: false, message: `${label} ${quote(text, 40)} is out of range: ${WINDOW_FORMS}` };
  }
  return { ok: true, ms: parsed.ms, canonical: canonical(parsed.ms) };
}

/**
 * A timeout or interval setting. Zero is accepted (a bare `0` too) and returned as 0: whether "no wait"
 * is meaningful is the caller's decision, as is any minimum.
 */
export function parseDuration(text: string, label = 'duration'): DurationResult {
  if (text === '0') return { ok: true, ms: 0, canonical: '0' };
  const parsed = parse(text);
  const forms = `use a whole number and a unit, e.g. "500ms", "10s", "2m", "1h" (units: ms, s, m, h, d; at most ${MAX_DURATION_MS} ms)`;
  if (parsed === undefined)
    return { ok: false, message: `${label} ${quote(text, 40)} is not valid: ${forms}` };
  if (parsed.ms > MAX_DURATION_MS)
    return { ok: false, message: `${label} ${quote(text, 40)} is too long: ${forms}` };
  return { ok: true, ms: parsed.ms, canonical: parsed.ms === 0 ? '0' : canonical(parsed.ms) };
}

function parse(text: string): { ms: number; unit: number } | undefined {
  const match = DURATION.exec(text);
  if (match === null) return undefined;
  const [, digits = '', unitText = ''] = match;
  if (digits.length > 1 && digits.startsWith('0')) return undefined;
  const unit = UNITS.get(unitText.toLowerCase());
  if (unit === undefined) return undefined;
  return { ms: Number(digits) * unit, unit };
}

/** A duration's shortest text, as the parser reads it back: 60000 → "1m", 1500 → "1500ms". */
export function canonical(ms: number): string {
  for (const [name, size] of CANONICAL_UNITS) if (ms % size === 0) return `${ms / size}${name}`;
  return `${ms}ms`;
}
