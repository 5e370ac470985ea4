import { afterEach, describe, expect, it, vi } from 'vitest';
import { READ_GRACE_MS, drain } from '../../src/vault/kek-rotate.js';

/**
 * The end of a rewrap waits READ_GRACE_MS after its last move before retiring the old version (a
 * server may still hold an envelope it read just before). A wall clock stepped forward meanwhile
 * used to cut that wait short.
 */
describe('the last wait of a rewrap', () => {
  afterEach(() => vi.restoreAllMocks());

  it('lasts its grace after the last move, whatever the wall clock does', async () => {
    let moved = 0;
    let lastMoveAt = Number.NEGATIVE_INFINITY;
    let sweeps = 0;
    const realNow = Date.now();
    const sweep = (): Promise<void> => {
      sweeps++;
      if (sweeps === 1) {
        moved++;
        lastMoveAt = performance.now();
        // Right after the move, the wall clock jumps an hour ahead.
        vi.spyOn(Date, 'now').mockImplementation(() => realNow + 3_600_000);
      }
      return Promise.resolve();
    };
    const started = performance.now();
    // Recorded long ago: no settling wait, only the grace after the move.
    await drain(sweep, () => ({ moved, lastMoveAt }), realNow - 60_000);
    expect(performance.now() - lastMoveAt).toBeGreaterThanOrEqual(READ_GRACE_MS - 5);
    expect(sweeps).toBeGreaterThanOrEqual(2);
    expect(performance.now() - started).toBeLessThan(READ_GRACE_MS + 5_000);
  });

  it('does not wait at all when nothing was moved', async () => {
    const started = performance.now();
    await drain(
      () => Promise.resolve(),
      () => ({ moved: 0, lastMoveAt: Number.NEGATIVE_INFINITY }),
      0,
    );
    expect(performance.now() - started).toBeLessThan(READ_GRACE_MS);
  });
});
