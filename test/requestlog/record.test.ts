import { describe, expect, it } from 'vitest';
import {
  MAX_RECORD_PATH_BYTES,
  PATH_CUT_MARK,
  recordOrigin,
  recordPath,
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
