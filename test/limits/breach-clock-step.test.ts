import { describe, expect, it } from 'vitest';
import { until } from '../support/poll.js';
import { attempt, breachMember } from './breach-members.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;

/**
 * A wall clock stepped back (an NTP correction, `date -s`, a VM restored) while attempts are
 * coalesced: the alerts owed come one interval after the step, not when the clock catches up.
 */
describe('breach alerts when the clock steps back an hour', () => {
  it('the trailing alert of a tuple comes a minute after the step', async () => {
    const clock = { at: Date.UTC(2026, 5, 1, 12, 0, 0) };
    const { breach, events } = breachMember(clock);
    breach.onUnauthorized(attempt('203.0.113.1', 'https://evil.example', clock.at));
    clock.at += 1_000;
    breach.onUnauthorized(attempt('203.0.113.1', 'https://evil.example', clock.at));
    await breach.flush();
    clock.at -= HOUR;
    await breach.flush();
    clock.at += MINUTE;
    await breach.flush();
    // Sent by the flush a minute after the step, not folded into a summary at close().
    await until('the trailing alert published', () => events.length >= 2);
    await breach.close();
    expect(events.map((e) => [e.data.attempts, e.data.summary ?? false])).toEqual([
      [1, false],
      [1, false],
    ]);
  });

  it('a summary the caps held back comes a minute after the step', async () => {
    const clock = { at: Date.UTC(2026, 5, 1, 12, 0, 0) };
    const { breach, events } = breachMember(clock);
    // Four tuples of one token: three alerts, the fourth held back by the per-token cap.
    for (let i = 1; i <= 4; i++)
      breach.onUnauthorized(attempt(`203.0.113.${i}`, 'https://evil.example', clock.at));
    await breach.flush();
    await until('three alerts published', () => events.length >= 3);
    clock.at -= HOUR;
    await breach.flush();
    clock.at += MINUTE;
    await breach.flush();
    // Sent by the flush a minute after the step, before close() would send it anyway.
    await until('the summary published', () => events.some((e) => e.data.summary === true));
    await breach.close();
    expect(events.find((e) => e.data.summary === true)?.data).toMatchObject({ summary: true, attempts: 1 });
  });
});
