import { describe, expect, it } from 'vitest';
import {
  MAX_RECORD_PATH_BYTES,
  MAX_REFUSED_RECORD_BYTES,
  PATH_CUT_MARK,
  recordOrigin,
  recordPath,
  recordTextLimit,
} from '../../src/requestlog/record.js';

describe('recordPath', () => {
  const bytes = (s: string): number => Buffer.byteLength(s);

  it.each([
    ['short', '/openai/v1/models'],
    ['exactly the limit', `/openai/${'a'.repeat(MAX_RECORD_PATH_BYTES - 8)}`],
    ['the limit in 2-byte characters', `/${'é'.repeat((MAX_RECORD_PATH_BYTES - 2) / 2)}x`],
  ])('keeps a path that fits: %s', (_name, path) => {
    expect(bytes(path)).toBeLessThanOrEqual(MAX_RECORD_PATH_BYTES);
    expect(recordPath(path)).toBe(path);
  });

  it.each([
    ['one byte over', `/openai/${'a'.repeat(MAX_RECORD_PATH_BYTES - 7)}`],
    ['16 KiB', `/openai/${'b'.repeat(16 * 1024)}`],
    ['multi-byte characters', `/openai/${'é'.repeat(5000)}`],
    ['astral characters', `/openai/${'😀'.repeat(3000)}`],
    ['lone surrogates', `/openai/${'\ud800'.repeat(3000)}`],
  ])('cuts a longer path and marks it: %s', (_name, path) => {
    const kept = recordPath(path);
    expect(kept.endsWith(PATH_CUT_MARK)).toBe(true);
    expect(bytes(kept)).toBeLessThanOrEqual(MAX_RECORD_PATH_BYTES);
    expect(bytes(kept)).toBeGreaterThan(MAX_RECORD_PATH_BYTES - 4);
    const start = kept.slice(0, -PATH_CUT_MARK.length);
    expect(path.startsWith(start)).toBe(true);
    // Never half a character: the kept start round-trips through UTF-8 unchanged.
    if (!path.includes('\ud800')) expect(Buffer.from(start).toString()).toBe(start);
  });
});

describe('recordOrigin', () => {
  it.each([
    ['the checked origin', 'https://app.example.com', 'https://app.example.com', 'https://app.example.com'],
    ['an Origin that is not one, as sent', undefined, 'javascript:alert(1)', 'javascript:alert(1)'],
    ['none sent', undefined, undefined, null],
    [
      "the Referer's origin when that is what was checked",
      'https://a.example',
      undefined,
      'https://a.example',
    ],
  ])('%s', (_name, checked, header, recorded) => {
    expect(recordOrigin(checked, header)).toBe(recorded);
  });

  it('cuts a long one like a path', () => {
    const kept = recordOrigin(undefined, `https://${'a'.repeat(8000)}.example`);
    expect(kept?.endsWith(PATH_CUT_MARK)).toBe(true);
    expect(Buffer.byteLength(kept ?? '')).toBeLessThanOrEqual(MAX_RECORD_PATH_BYTES);
  });
});

describe('a refused request keeps less of what its sender chose', () => {
  const bytes = (s: string): number => Buffer.byteLength(s);

  it.each([
    ['forwarded', true, 2048],
    ['refused', false, 256],
  ])('%s: %i bytes', (_name, forwarded, limit) => {
    expect(recordTextLimit(forwarded)).toBe(limit);
  });

  it.each([
    // name, value, forwarded, kept whole
    ['a short path, refused', '/openai/v1/chat/completions', false, true],
    ['85 characters, refused (decided without counting)', `/${'a'.repeat(84)}`, false, true],
    ['exactly 256 bytes, refused', `/${'a'.repeat(255)}`, false, true],
    ['257 bytes, refused', `/${'a'.repeat(256)}`, false, false],
    ['257 bytes, forwarded', `/${'a'.repeat(256)}`, true, true],
    ['2,100 bytes, refused', `/${'a'.repeat(2099)}`, false, false],
    ['2,100 bytes, forwarded', `/${'a'.repeat(2099)}`, true, false],
    ['2-byte characters over 256 bytes, refused', `/${'é'.repeat(200)}`, false, false],
    ['astral characters over 256 bytes, refused', `/${'😀'.repeat(100)}`, false, false],
  ])('%s', (_name, value, forwarded, whole) => {
    const limit = recordTextLimit(forwarded);
    for (const kept of [recordPath(value, limit), recordOrigin(undefined, value, limit) ?? '']) {
      if (whole) {
        // A value that fits is kept whole (bench:alloc shows a fitting path allocates nothing).
        expect(kept).toBe(value);
        continue;
      }
      expect(kept.endsWith(PATH_CUT_MARK)).toBe(true);
      expect(bytes(kept)).toBeLessThanOrEqual(limit);
      expect(bytes(kept)).toBeGreaterThan(limit - 4);
      const start = kept.slice(0, -PATH_CUT_MARK.length);
      expect(value.startsWith(start)).toBe(true);
      expect(Buffer.from(start).toString()).toBe(start);
    }
  });

  it('cuts to 256 bytes by the same rule as the 2,048-byte cut', () => {
    expect(MAX_REFUSED_RECORD_BYTES).toBe(256);
    const path = `/openai/${'b'.repeat(4000)}`;
    const refused = recordPath(path, MAX_REFUSED_RECORD_BYTES);
    expect(recordPath(path).startsWith(refused.slice(0, -PATH_CUT_MARK.length))).toBe(true);
  });
});
