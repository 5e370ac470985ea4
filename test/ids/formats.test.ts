import { describe, expect, it } from 'vitest';
import { BASE58_ALPHABET, base58Fixed, pooledRandomBase58, randomBase58 } from '../../src/ids/base58.js';
import {
  apiKeyStart,
  isApiKey,
  isId,
  isSanitizedToken,
  isTokenId,
  newApiKey,
  newId,
  newRequestId,
  newSanitizedToken,
  newTokenId,
  realKeyHint,
  sanitizedKeyHint,
  secretDigest,
} from '../../src/ids/formats.js';

const BODY43 = '7Qm' + 'a'.repeat(40);

describe('generated formats (DESIGN §1)', () => {
  it.each([
    ['sanitized token', newSanitizedToken, /^svc_hb_[1-9A-HJ-NP-Za-km-z]{43}$/, 50],
    ['API key', newApiKey, /^svc_sk_[1-9A-HJ-NP-Za-km-z]{43}$/, 50],
    ['token id', newTokenId, /^[1-9A-HJ-NP-Za-km-z]{43}$/, 43],
    ['key id', () => newId('key'), /^key_[1-9A-HJ-NP-Za-km-z]{22}$/, 26],
    ['webhook id', () => newId('webhook'), /^wh_[1-9A-HJ-NP-Za-km-z]{22}$/, 25],
    ['event id', () => newId('event'), /^evt_[1-9A-HJ-NP-Za-km-z]{22}$/, 26],
    ['account id', () => newId('account'), /^acct_[1-9A-HJ-NP-Za-km-z]{22}$/, 27],
  ] as const)('%s has its format and length, and differs every time', (_name, make, pattern, length) => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const value = make();
      expect(value).toMatch(pattern);
      expect(value).toHaveLength(length);
      seen.add(value);
    }
    expect(seen.size).toBe(200);
  });

  it('draws each base58 character uniformly (rejection sampling, no modulo bias)', () => {
    const perChar = 10_000;
    const counts = new Map<string, number>();
    for (const ch of randomBase58(58 * perChar)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect([...counts.keys()].sort().join('')).toBe(Array.from(BASE58_ALPHABET).sort().join(''));
    // σ ≈ 100 per character. Plain `byte % 58` would put the first 24 characters near 11,300 and the
    // rest near 9,060, far outside this band.
    for (const [ch, n] of counts) expect(Math.abs(n - perChar), ch).toBeLessThan(600);
  });

  it('never uses the characters base58 leaves out', () => {
    expect(randomBase58(20_000)).not.toMatch(/[0OIl+/=_-]/);
    expect(pooledRandomBase58(20_000)).not.toMatch(/[0OIl+/=_-]/);
  });

  it('draws pooled characters uniformly too, across many pool refills', () => {
    const perChar = 10_000;
    const counts = new Map<string, number>();
    // Many short draws, as the proxy makes them: 14 characters per request id.
    for (let i = 0; i < (58 * perChar) / 14; i++) {
      for (const ch of pooledRandomBase58(14)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    }
    expect(counts.size).toBe(58);
    for (const [ch, n] of counts) expect(Math.abs(n - perChar), ch).toBeLessThan(600);
  });
});

describe('request ids (time-ordered)', () => {
  it('are req_ + 22 base58, start with the time, and differ within one millisecond', () => {
    const now = Date.UTC(2026, 10, 23, 6, 0, 0, 123);
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const id = newRequestId(now);
      expect(id).toMatch(/^req_[1-9A-HJ-NP-Za-km-z]{22}$/);
      expect(id.slice(4, 12)).toBe(base58Fixed(now, 8));
      seen.add(id);
    }
    expect(seen.size).toBe(1000);
  });

  it('sort by time, whatever their random part', () => {
    const times = [0, 57, 58, 1_700_000_000_000, Date.UTC(2026, 10, 25), 58 ** 8 - 2];
    const ids = times.map((t) => newRequestId(t));
    expect([...ids].sort()).toEqual(ids);
  });

  it('draw their random part uniformly from the base58 alphabet', () => {
    const perChar = 10_000;
    const counts = new Map<string, number>();
    for (let i = 0; i < (58 * perChar) / 14; i++) {
      for (const ch of newRequestId(i).slice(12)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    }
    expect(counts.size).toBe(58);
    for (const [ch, n] of counts) expect(Math.abs(n - perChar), ch).toBeLessThan(600);
  });

  it.each([
    [0, '11111111'],
    [57, '1111111z'],
    [58, '11111121'],
    [58 ** 8 - 1, 'zzzzzzzz'],
  ])('base58Fixed(%d, 8) = %s', (value, expected) => {
    expect(base58Fixed(value, 8)).toBe(expected);
  });

  it.each([-1, 1.5, 58 ** 8, Number.NaN])('base58Fixed refuses %d for 8 digits', (value) => {
    expect(() => base58Fixed(value, 8)).toThrow(RangeError);
  });

  it('clamps a clock that is out of range instead of failing the request', () => {
    expect(newRequestId(-5).slice(4, 12)).toBe('11111111');
    expect(newRequestId(Number.NaN).slice(4, 12)).toBe('11111111');
    expect(newRequestId(1e20).slice(4, 12)).toBe('zzzzzzzz');
    expect(newRequestId(1234.9).slice(4, 12)).toBe(base58Fixed(1234, 8));
  });

  it('sort bytewise in the order of their times, across digit carries and years', () => {
    const times = [
      0,
      57,
      58,
      Date.UTC(2001, 0, 1),
      Date.UTC(2026, 10, 23, 6, 0, 0, 999),
      Date.UTC(2026, 10, 23, 6, 0, 1, 0),
      Date.UTC(2100, 0, 1),
    ];
    const ids = times.map((t) => newRequestId(t));
    const bytewise = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(bytewise).toEqual(ids);
  });
});

describe('format checks', () => {
  it.each([
    ['svc_hb_' + BODY43, true],
    ['svc_hb_' + BODY43.slice(1), false], // 42 characters
    ['svc_hb_' + BODY43 + 'a', false], // 44
    ['svc_hb_' + BODY43.slice(1) + '0', false], // 0 is not base58
    ['svc_hb_' + BODY43.slice(1) + 'l', false], // nor l
    ['SVC_HB_' + BODY43, false],
    ['svc_sk_' + BODY43, false],
    [' svc_hb_' + BODY43, false],
    ['svc_hb_' + BODY43 + '\n', false],
    ['', false],
  ])('isSanitizedToken(%j) = %s', (value, expected) => {
    expect(isSanitizedToken(value)).toBe(expected);
  });

  it.each([
    ['svc_sk_' + BODY43, true],
    ['svc_hb_' + BODY43, false],
    ['svc_sk_' + BODY43.slice(2), false],
  ])('isApiKey(%j) = %s', (value, expected) => {
    expect(isApiKey(value)).toBe(expected);
  });

  it.each([
    [BODY43, true],
    [BODY43.slice(1), false],
    ['svc_hb_' + BODY43, false],
  ])('isTokenId(%j) = %s', (value, expected) => {
    expect(isTokenId(value)).toBe(expected);
  });

  it.each([
    ['key', 'key_' + 'a'.repeat(22), true],
    ['key', 'key_' + 'a'.repeat(21), false],
    ['key', 'wh_' + 'a'.repeat(22), false],
    ['webhook', 'wh_' + 'a'.repeat(22), true],
    ['account', 'acct_' + 'a'.repeat(22), true],
    ['event', 'evt_' + '0'.repeat(22), false],
  ] as const)('isId(%s, %j) = %s', (kind, value, expected) => {
    expect(isId(kind, value)).toBe(expected);
  });
});

describe('hints and digests', () => {
  it('sanitized_key_hint is svc_hb_ + first 4 + … + last 4 of the body', () => {
    const token = 'svc_hb_ABCD' + 'x'.repeat(35) + 'WXYZ';
    expect(sanitizedKeyHint(token)).toBe('svc_hb_ABCD\u2026WXYZ');
  });

  it('an API key keeps a short visible start', () => {
    expect(apiKeyStart('svc_sk_' + BODY43)).toBe('svc_sk_7Qma');
  });

  it.each([
    ['sk-proj-abcdefghijklmnop1234', '1234'],
    ['abcdefghijkl', 'ijkl'],
    ['abcdefghijk', ''], // under 12 characters: 4 would give too much away
    ['', ''],
  ])('realKeyHint(%j) = %j', (key, hint) => {
    expect(realKeyHint(key)).toBe(hint);
  });

  it('secretDigest is the SHA-256 hex of the secret', () => {
    expect(secretDigest('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
