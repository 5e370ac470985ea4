import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { LOG_WORKER_IDLE_RULE } from '../../src/requestlog/log-budgets.js';
import { until } from '../support/poll.js';
import {
  IDLE_MEMORY_RULE,
  memoryReducingGc,
  shouldReduceMemory,
  startIdleMemoryReducer,
  type MemoryReduction,
} from '../../src/runtime/idle-memory.js';

describe('idle memory reduction: rule', () => {
  it.each([
    [0, 60_000, false, 'a thread that did nothing is left alone'],
    [4_999, 60_000, false, 'too little work since the last reduction'],
    [5_000, 59_999, false, 'not quiet long enough: a lull between bursts'],
    [5_000, 60_000, true, 'a busy spell, then a minute without work'],
    [80_000, 600_000, true, 'a long spell, long over'],
  ] as const)('work %i, quiet %i ms → %s (%s)', (work, quietMs, reduce, why) => {
    expect(shouldReduceMemory(work, quietMs, IDLE_MEMORY_RULE), why).toBe(reduce);
  });
});

describe('idle memory reduction: the log worker waits seconds, not a minute', () => {
  it.each([
    [9_999, 600_000, false, 'fewer records than a busy spell, however long ago'],
    [10_000, 4_999, false, 'a lull between bursts'],
    [10_000, 5_000, true, 'a spell of records, then 5 s without one'],
  ] as const)('records %i, quiet %i ms → %s (%s)', (work, quietMs, reduce, why) => {
    expect(shouldReduceMemory(work, quietMs, LOG_WORKER_IDLE_RULE), why).toBe(reduce);
  });
});

/** Garbage that makes V8 commit pages, as a busy spell does: ~100 MB allocated, little kept. */
function churn(): void {
  let keep: object[] = [];
  for (let i = 0; i < 1_000_000; i++) {
    keep.push({ n: i, s: `request ${i}`, a: [i, i + 1] });
    if (keep.length > 400_000) keep = [];
  }
}

describe('idle memory reduction: on a real heap', () => {
  it('this Node has the memory-reducing collection', () => {
    expect(memoryReducingGc()).not.toBeNull();
  });

  it('returns memory once the work stops, not while it goes on, and not again without new work', async () => {
    let work = 0;
    const reductions: MemoryReduction[] = [];
    const reducer = startIdleMemoryReducer(() => work, {
      rule: { quietMs: 300, minWork: 10 },
      checkEveryMs: 50,
      onReduced: (r) => reductions.push(r),
    });
    try {
      // Busy: the counter moves at every check, so no reduction however long it lasts.
      for (let i = 0; i < 8; i++) {
        churn();
        work += 5;
        await sleep(60);
      }
      expect(reductions).toHaveLength(0);

      // Quiet: one reduction, which gives back what the spell made V8 keep.
      await until('the reduction after the spell', () => reductions.length > 0, { timeoutMs: 2_000 });
      expect(reductions).toHaveLength(1);
      const [r] = reductions as [MemoryReduction];
      expect(r.rssAfter).toBeLessThan(r.rssBefore - 20 * 1_048_576);

      // Still quiet, no new work: nothing more to do.
      await sleep(600);
      expect(reductions).toHaveLength(1);
    } finally {
      reducer.stop();
    }
  }, 60_000);

  it('counts the start-up as a busy spell: once, after the quiet time, merged with early work', async () => {
    const reductions: MemoryReduction[] = [];
    let work = 0;
    const reducer = startIdleMemoryReducer(() => work, {
      rule: { quietMs: 300, minWork: 10 },
      checkEveryMs: 50,
      onReduced: (r) => reductions.push(r),
    });
    try {
      // Work before the first quiet spell is part of the start-up's spell, not a second one.
      work += 3;
      await sleep(100);
      expect(reductions).toHaveLength(0);
      await until("the start-up's reduction", () => reductions.length > 0, { timeoutMs: 2_000 });
      expect(reductions).toHaveLength(1);

      // After it, the ordinary rule: a few requests and a pause give nothing more to do.
      work += 3;
      await sleep(800);
      expect(reductions).toHaveLength(1);
    } finally {
      reducer.stop();
    }
  }, 30_000);

  it('waits the quiet time, never reduces while work is in flight, forgets a trickle, stops when told', async () => {
    let work = 0;
    let busy = true;
    const reductions: MemoryReduction[] = [];
    const reducer = startIdleMemoryReducer(() => work, {
      rule: { quietMs: 1_000, minWork: 10 },
      checkEveryMs: 50,
      busy: () => busy,
      onReduced: (r) => reductions.push(r),
    });
    try {
      work = 10; // enough work, but a stream is still open
      await sleep(1_500);
      expect(reductions).toHaveLength(0);
      busy = false;
      await sleep(300); // quiet, not long enough yet
      expect(reductions).toHaveLength(0);
      await sleep(1_500);
      expect(reductions).toHaveLength(1);

      // A trickle: 5, a quiet second, 5 more: never 10 in one spell.
      work += 5;
      await sleep(1_500);
      work += 5;
      await sleep(1_500);
      expect(reductions).toHaveLength(1);

      work += 10;
      reducer.stop();
      await sleep(1_500);
      expect(reductions).toHaveLength(1);
    } finally {
      reducer.stop();
    }
  }, 30_000);
});
