import { describe, expect, it } from 'vitest';
import { crashesInARow, restartDelayMs, shouldGiveUp } from '../../src/cluster/restart-backoff.js';

describe('restarting dead workers', () => {
  it.each([
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [5, 16_000],
    [6, 30_000],
    [40, 30_000],
  ])('after %i crashes in a row waits %i ms', (crashes, ms) => {
    expect(restartDelayMs(crashes)).toBe(ms);
  });

  it.each([
    [0, 500, 1],
    [3, 59_999, 4],
    [3, 60_000, 1],
    [9, 3_600_000, 1],
  ])('%i crashes before, up %i ms: %i in a row now', (previous, uptime, expected) => {
    expect(crashesInARow(previous, uptime)).toBe(expected);
  });

  it.each<[number[], boolean]>([
    [[5, 5], true],
    [[5, 4], false],
    [[0, 9], false],
    [[7], true],
    [[], false],
  ])('slots %j: give up %s', (slots, expected) => {
    expect(shouldGiveUp(slots)).toBe(expected);
  });
});
