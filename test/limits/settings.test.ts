import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSetting } from '../../src/config/convert.js';
import { loadConfig } from '../../src/config/load.js';
import type { SettingKind } from '../../src/config/settings.js';
import { anomalySettingsFrom } from '../../src/limits/index.js';

describe('limits settings', () => {
  const factor: SettingKind = { type: 'number', min: 1, max: 1000, integer: false };
  const count: SettingKind = { type: 'number', min: 1, max: 100, integer: true };

  it.each([
    [factor, '2.5', 2.5],
    [factor, 10, 10],
    [count, '7', 7],
    [count, 100, 100],
  ] as const)('%o accepts %o', (kind, raw, value) => {
    expect(convertSetting(kind, raw)).toEqual({ ok: true, value });
  });

  it.each([
    [factor, '0.5'],
    [factor, 'ten'],
    [factor, '-2'],
    [count, '2.5'],
    [count, 101],
    [count, true],
  ] as const)('%o refuses %o', (kind, raw) => {
    expect(convertSetting(kind, raw).ok).toBe(false);
  });

  it('defaults, environment and config file reach the anomaly settings', () => {
    const defaults = loadConfig({ flags: {}, env: {} });
    expect(anomalySettingsFrom(defaults)).toMatchObject({
      spikeFactor: 10,
      minRequests: 100,
      distinctIps: 20,
      warmupMs: 3_600_000,
    });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tokenproxy-limits-'));
    const file = path.join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ anomaly_spike_factor: 4, anomaly_distinct_ips: 50 }));
    const config = loadConfig({
      flags: { anomaly_warmup: '10m' },
      env: { TOKENPROXY_ANOMALY_MIN_REQUESTS: '30' },
      configFile: file,
    });
    expect(anomalySettingsFrom(config)).toMatchObject({
      spikeFactor: 4,
      minRequests: 30,
      distinctIps: 50,
      warmupMs: 600_000,
    });
    expect(() => loadConfig({ flags: {}, env: { TOKENPROXY_ANOMALY_SPIKE_FACTOR: '0' } })).toThrow(
      /anomaly_spike_factor/,
    );
  });

  it.each([
    // workers, anomaly_min_requests → each worker's floor; anomaly_distinct_ips stays whole
    [1, 100, 100],
    [2, 100, 50],
    [3, 100, 34],
    [8, 5, 1],
  ])('under --workers %i the request floor %i is shared: each worker takes %i', (workers, min, perWorker) => {
    const config = loadConfig({
      flags: {},
      env: {
        TOKENPROXY_WORKERS: String(workers),
        TOKENPROXY_REDIS: 'redis://127.0.0.1:6379',
        TOKENPROXY_ANOMALY_MIN_REQUESTS: String(min),
        TOKENPROXY_ANOMALY_DISTINCT_IPS: '2',
      },
    });
    // Distinct IPs stay whole: a client's connections reach every worker (2 is the setting's least).
    expect(anomalySettingsFrom(config)).toMatchObject({ minRequests: perWorker, distinctIps: 2 });
  });
});
