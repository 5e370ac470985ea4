import { describe, expect, it } from 'vitest';
import { wholeMs } from '../../src/rules/whole-ms.js';

describe('wholeMs: a measured duration in the whole milliseconds records hold', () => {
  it.each([
    [0, 0],
    [0.4, 0],
    [0.5, 1],
    [0.6, 1],
    [1234.49, 1234],
    [2.5, 3],
  ])('%s → %s', (ms, whole) => {
    expect(wholeMs(ms)).toBe(whole);
  });

  it('a second rounding changes nothing', () => {
    expect(wholeMs(wholeMs(7.5))).toBe(8);
  });
});
