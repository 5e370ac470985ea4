import { describe, expect, it } from 'vitest';
import { TOKEN_SHARE, TokenShares, withinShare } from '../../src/requestlog/token-shares.js';

/** One token's share of a shared log queue (refused records of known tokens, anomaly entries). */

describe('withinShare', () => {
  it.each([
    // held count, held bytes, item bytes, budget, max → admitted
    ['nothing held: always, even an item larger than the share', 0, 0, 5000, 8000, 800, true],
    ['well under the share', 3, 300, 100, 8000, 800, true],
    ['reaching the share exactly', 9, 900, 100, 8000, 800, true],
    ['one byte over the share', 9, 901, 100, 8000, 800, false],
    ['at the share already', 10, 1000, 1, 8000, 800, false],
    ['the count share reached, bytes to spare', 100, 1000, 1, 1e9, 800, false],
    ['one under the count share', 99, 1000, 1, 1e9, 800, true],
  ])('%s', (_name, count, bytes, itemBytes, budget, max, admitted) => {
    expect(withinShare(count, bytes, itemBytes, budget, max)).toBe(admitted);
  });

  it('is an eighth', () => {
    expect(TOKEN_SHARE).toBe(1 / 8);
  });
});

describe('TokenShares', () => {
  const budget = 8000;
  const max = 800;

  it('counts a token until its items are stored, across posts, lost workers and trims', () => {
    const shares = new TokenShares();
    for (let i = 0; i < 10; i += 1) shares.add('tok_a', 100);
    shares.add('tok_b', 50);
    expect(shares.admits('tok_a', 1, budget, max)).toBe(false);
    expect(shares.admits('tok_b', 100, budget, max)).toBe(true);
    expect(shares.admits('tok_new', 5000, budget, max)).toBe(true);

    const first = shares.post();
    expect([...(first ?? [])]).toEqual([
      ['tok_a', { count: 10, bytes: 1000 }],
      ['tok_b', { count: 1, bytes: 50 }],
    ]);
    // Posted still counts; a post with nothing waiting carries nothing.
    expect(shares.held('tok_a')).toEqual({ count: 10, bytes: 1000 });
    expect(shares.post()).toBeUndefined();
    shares.add('tok_a', 100);
    const second = shares.post();

    // The worker died with both: given back, then waiting again.
    shares.forget(first);
    shares.forget(second);
    expect(shares.held('tok_a')).toEqual({ count: 0, bytes: 0 });
    shares.requeue(first);
    shares.requeue(second);
    expect(shares.held('tok_a')).toEqual({ count: 11, bytes: 1100 });

    // A waiting item trimmed; the rest posted and stored.
    shares.trimmed('tok_a', 100);
    const third = shares.post();
    expect(third?.get('tok_a')).toEqual({ count: 10, bytes: 1000 });
    shares.forget(third);
    expect(shares.tokens).toBe(0);
    expect(shares.held('tok_b')).toEqual({ count: 0, bytes: 0 });
  });

  it('forgets everything on clear', () => {
    const shares = new TokenShares();
    shares.add('tok_a', 100);
    shares.post();
    shares.add('tok_a', 100);
    shares.clear();
    expect(shares.tokens).toBe(0);
    expect(shares.post()).toBeUndefined();
  });
});
