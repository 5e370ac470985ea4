import { afterEach, describe, expect, it, vi } from 'vitest';
import { WRITE_REFUSAL_MEMORY_MS, WriteHealth } from '../../src/store/guard.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('WriteHealth and the wall clock', () => {
  it('a refusal is forgotten after its memory even when the wall clock stepped back meanwhile', () => {
    let wall = Date.UTC(2026, 5, 1, 12, 0, 0);
    let monotonic = 1_000;
    vi.spyOn(Date, 'now').mockImplementation(() => wall);
    vi.spyOn(performance, 'now').mockImplementation(() => monotonic);
    const health = new WriteHealth();
    health.refused('full');
    expect(health.current()).toBe('full');
    // A minute later the wall clock is stepped back an hour (an NTP correction, a VM restored).
    wall += WRITE_REFUSAL_MEMORY_MS + 1 - 3_600_000;
    monotonic += WRITE_REFUSAL_MEMORY_MS + 1;
    // Before: /readyz stayed degraded for the hour of the step as well.
    expect(health.current()).toBeUndefined();
  });
});
