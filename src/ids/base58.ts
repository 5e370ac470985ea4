import { randomBytes } from 'node:crypto';

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
