import { describe, expect, it } from 'vitest';
import { remainingWait, sentAtSeen, windowEnd } from '../../src/rules/clock-steps.js';

const T = 1_800_000_000_000;
const HOUR = 3_600_000;

describe('clock steps', () => {
  it.each([
    // [resetAt, windowMs, now, end]
    [T + 60_000, 60_000, T, T + 60_000], // opened now
    [T + 60_000, 60_000, T + 30_000, T + 60_000], // half way
    [T + 60_000, 60_000, T + 60_000, T + 60_000], // over (the caller opens the next)
    [T + 60_000, 60_000, T - 10 * 60_000, T - 10 * 60_000 + 60_000], // 10 min back
    [T + 60_000, 60_000, T - HOUR, T - HOUR + 60_000], // an hour back
    [T + HOUR, HOUR, T + 1, T + HOUR], // a long window under way: untouched
  ])('windowEnd(%i, %i, %i) = %i', (resetAt, windowMs, now, end) => {
    expect(windowEnd(resetAt, windowMs, now)).toBe(end);
  });

  it.each([
    // [last, until, now, remaining]
    [T, T + 1_000, T, 1_000],
    [T, T + 1_000, T + 400, 600],
    [T, T + 1_000, T + 1_000, 0],
    [T, T + 1_000, T + HOUR, 0],
    [T, T + 1_000, T - HOUR, 0], // stepped back by more than the wait: over, not an hour more
    [T, T + 1_000, T - 1_000, 0], // by exactly the wait
    [T, T + 1_000, T - 999, 1_000], // by less (a member a little behind): the whole wait is owed
    [T, T + HOUR, T - 10 * 60_000, HOUR], // a 1 h wait, 10 min back: still owed, never more than 1 h
  ])('remainingWait(%i, %i, %i) = %i', (last, until, now, remaining) => {
    expect(remainingWait(last, until, now)).toBe(remaining);
  });

  it.each([
    [-Infinity, T, -Infinity], // never sent
    [T - 1, T, T - 1],
    [T, T, T],
    [T + HOUR, T, T], // stepped back: sent "now"
  ])('sentAtSeen(%d, %i) = %d', (sentAt, now, seen) => {
    expect(sentAtSeen(sentAt, now)).toBe(seen);
  });
});
