import { randomBytes, randomFillSync } from 'node:crypto';

/** The Bitcoin base58 alphabet: no 0, O, I or l, so ids survive being read aloud or retyped. */
export const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

// 232 = 4 * 58: bytes at or above it are thrown away so every character is equally likely
// (plain `byte % 58` would favour the first 24 characters).
const REJECT_AT = 232;

/**
 * `length` characters drawn uniformly from the base58 alphabet with a CSPRNG. This is not the
 * base58 *encoding* of a byte string: see docs/decisions.md ("Token and id format").
 */
export function randomBase58(length: number): string {
  let out = '';
  while (out.length < length) {
    // Ask for a little more than needed: about 9.4% of bytes are rejected.
    const bytes = randomBytes(Math.ceil((length - out.length) * 1.2) + 4);
    for (const byte of bytes) {
      if (byte >= REJECT_AT) continue;
      out += BASE58_ALPHABET.charAt(byte % 58);
      if (out.length === length) break;
    }
  }
  return out;
}

/**
 * Random bytes are drawn from the CSPRNG in blocks and handed out from there (as `crypto.randomUUID`
 * does): one system call per 256 ids instead of one per id on the proxy's hot path.
 */
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let poolAt = POOL_SIZE;

function pooledByte(): number {
  if (poolAt === POOL_SIZE) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++] as number;
}

/**
 * Like randomBase58, from the pooled bytes. For ids only: pooled bytes sit in memory until the pool
 * is refilled, so secrets (sanitized tokens, API keys) keep drawing fresh bytes with randomBase58.
 */
export function pooledRandomBase58(length: number): string {
  const out = Buffer.allocUnsafe(length);
  writePooledRandom(out, 0, length);
  return out.toString('latin1');
}

const ALPHABET_CODES = Buffer.from(BASE58_ALPHABET, 'latin1');

/** Fills `out[from..end)` with base58 characters drawn from the pooled bytes (rejection sampling). */
function writePooledRandom(out: Buffer, from: number, end: number): void {
  for (let i = from; i < end;) {
    const byte = pooledByte();
    if (byte < REJECT_AT) out[i++] = ALPHABET_CODES[byte % 58] as number;
  }
}

/** 58^8 ms is about 4,000 years: eight digits keep ids of our era the same length. */
const TIME_DIGITS = 8;
const MAX_TIME = 58 ** TIME_DIGITS - 1;

/**
 * `value` (a non-negative integer below 58^digits) as fixed-width base58. The alphabet is in ASCII
 * order, so these strings sort (bytewise) like the numbers they encode.
 */
export function base58Fixed(value: number, digits: number): string {
  if (!Number.isSafeInteger(value) || value < 0 || value >= 58 ** digits) {
    throw new RangeError(`base58Fixed: ${String(value)} does not fit in ${String(digits)} base58 digits`);
  }
  const out = Buffer.allocUnsafe(digits);
  writeFixed(out, 0, value, digits);
  return out.toString('latin1');
}

/** Writes `value` as `digits` base58 characters at `out[at]`, most significant first; it must fit. */
function writeFixed(out: Buffer, at: number, value: number, digits: number): void {
  let rest = value;
  for (let i = at + digits - 1; i >= at; i--) {
    out[i] = ALPHABET_CODES[rest % 58] as number;
    rest = Math.floor(rest / 58);
  }
}
/** Where an id is spelled before it becomes one string: it holds no secret, only the next id. */
const idScratch = Buffer.allocUnsafe(64);

/**
 * `prefix` then `length` characters: the time in milliseconds (8 characters) then random ones. Rows
 * keyed by such ids are appended to the end of their primary-key index instead of landing on a random
 * page of it, which is what keeps request-log inserts cheap as the table grows. Spelled byte by byte
 * into one scratch buffer and made a string once: built by concatenation, each request's id left
 * two dozen short strings for the collector (`npm run bench:alloc`).
 */
export function timeOrderedBase58(length: number, nowMs: number, prefix = ''): string {
  const start = prefix.length;
  if (length < TIME_DIGITS || start + length > idScratch.length) {
    throw new RangeError(`timeOrderedBase58: ${String(length)} characters do not fit an id`);
  }
  // A clock is never trusted to throw on the hot path: out-of-range times are clamped (NaN → 0).
  const ms = Number.isFinite(nowMs) ? Math.min(Math.max(Math.floor(nowMs), 0), MAX_TIME) : 0;
  const out = idScratch;
  for (let i = 0; i < start; i++) out[i] = prefix.charCodeAt(i);
  writeFixed(out, start, ms, TIME_DIGITS);
  const end = start + length;
  writePooledRandom(out, start + TIME_DIGITS, end);
  return out.toString('latin1', 0, end);
}
