import { describe, expect, it } from 'vitest';
import {
  AnomalyModel,
  DEFAULT_ANOMALY_SETTINGS,
  type AnomalySettings,
} from '../../src/limits/anomaly-model.js';

const MIN = 60_000;
const S: AnomalySettings = {
  ...DEFAULT_ANOMALY_SETTINGS,
  spikeFactor: 5,
  minRequests: 20,
  distinctIps: 10,
  warmupMs: 30 * MIN,
};
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % (10 * MIN));

/** `perMinute` requests in each of `minutes` minutes from `start`; returns the kinds reported. */
function steady(
  m: AnomalyModel,
  start: number,
  minutes: number,
  perMinute: number,
  ip = '10.0.0.1',
): string[] {
  const kinds: string[] = [];
  for (let i = 0; i < minutes; i++) {
    for (let j = 0; j < perMinute; j++) {
      const found = m.observe('t', start + i * MIN + j, ip, 'DE');
      if (found) kinds.push(...found.map((d) => d.kind));
    }
  }
  return kinds;
}

describe('anomaly model', () => {
  it('reports a rate spike well above the baseline once, after the warm-up only', () => {
    const m = new AnomalyModel(S);
    expect(steady(m, T0, 40, 3)).toEqual([]); // 3/min for 40 min: the baseline
    const burst: string[] = [];
    for (let i = 0; i < 60; i++) {
      const found = m.observe('t', T0 + 40 * MIN + i, '10.0.0.1', 'DE');
      if (found) burst.push(...found.map((d) => `${d.kind}@${i + 1}`));
    }
    expect(burst).toEqual(['rate_spike@20']); // min_requests reached and 20 ≥ 5 × ~3
  });

  it('table: what counts as a spike', () => {
    const rows: [string, number, number, boolean][] = [
      // [case, baseline per minute, burst size, spike?]
      ['below min_requests', 0, 19, false],
      ['at min_requests over an idle baseline', 0, 20, true],
      ['at min_requests but under factor × baseline', 10, 20, false],
      ['above factor × baseline', 10, 60, true],
    ];
    for (const [name, base, burst, spike] of rows) {
      const m = new AnomalyModel(S);
      steady(m, T0, 120, base);
      if (base === 0) m.observe('t', T0, '10.0.0.1', 'DE'); // first seen: starts the warm-up
      let seen = false;
      for (let i = 0; i < burst; i++) {
        const found = m.observe('t', T0 + 120 * MIN + i, '10.0.0.1', 'DE');
        if (found?.some((d) => d.kind === 'rate_spike')) seen = true;
      }
      expect(seen, name).toBe(spike);
    }
  });

  it('no report during the warm-up, however large the burst', () => {
    const m = new AnomalyModel(S);
    const kinds: string[] = [];
    for (let i = 0; i < 500; i++) {
      const found = m.observe('t', T0 + i, `10.0.${i >> 8}.${i & 255}`, i % 2 ? 'DE' : 'FR');
      if (found) kinds.push(...found.map((d) => d.kind));
    }
    expect(kinds).toEqual([]);
  });

  it('new country after the warm-up, once per cooldown; countries of the warm-up are known', () => {
    const m = new AnomalyModel(S);
    m.observe('t', T0, '10.0.0.1', 'DE');
    m.observe('t', T0 + MIN, '10.0.0.1', 'FR');
    expect(m.observe('t', T0 + 31 * MIN, '10.0.0.1', 'FR')).toBeNull();
    expect(m.observe('t', T0 + 31 * MIN + 1, '10.0.0.1', null)).toBeNull();
    const found = m.observe('t', T0 + 32 * MIN, '10.0.0.1', 'KP');
    expect(found).toEqual([
      { kind: 'new_country', details: { country: 'KP', known_countries: ['DE', 'FR'] } },
    ]);
    expect(m.observe('t', T0 + 33 * MIN, '10.0.0.1', 'RU')).toBeNull(); // cooldown (10 min)
    expect(m.observe('t', T0 + 33 * MIN + 1, '10.0.0.1', 'RU')).toBeNull(); // learned meanwhile
    expect(m.observe('t', T0 + 43 * MIN, '10.0.0.1', 'CN')?.[0]?.kind).toBe('new_country');
  });

  it('many distinct IPs in one window, against the token baseline', () => {
    const m = new AnomalyModel(S);
    steady(m, T0, 40, 2); // one IP for 40 minutes
    const kinds: string[] = [];
    for (let i = 0; i < 27; i++) {
      // 3 a minute: no rate spike, but a new IP each time
      const found = m.observe('t', T0 + 40 * MIN + i * 20_000, `192.0.2.${i}`, 'DE');
      if (found) kinds.push(...found.map((d) => `${d.kind}@${i + 1}`));
    }
    expect(kinds).toEqual(['many_ips@10']);
  });

  it('keeps tokens apart and sweeps idle ones', () => {
    const m = new AnomalyModel(S);
    m.observe('a', T0, '10.0.0.1', 'DE');
    m.observe('b', T0, '10.0.0.1', 'DE');
    expect(m.size).toBe(2);
    m.sweep(T0 + 25 * 60 * MIN);
    expect(m.size).toBe(0);
  });
});
