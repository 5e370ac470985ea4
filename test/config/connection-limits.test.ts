import { describe, expect, it } from 'vitest';
import { connectionLimits, type ConnectionSettings } from '../../src/config/connection-limits.js';
import { convertSetting } from '../../src/config/convert.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { SETTINGS } from '../../src/config/settings.js';

const AUTO: ConnectionSettings = { proxy: 'auto', upstream: 'auto' };

describe('connectionLimits: caps from the descriptor limit', () => {
  it.each([
    // limit, settings, proxy, upstream, api, overcommitted
    [256, AUTO, 56, 56, 16, false],
    [1024, AUTO, 416, 416, 64, false],
    [4096, AUTO, 1856, 1856, 256, false],
    // The systemd unit of docs/operations.md.
    [65_536, AUTO, 32_192, 32_192, 1024, false],
    [1_048_576, AUTO, 523_712, 523_712, 1024, false],
    // Too low to leave anything: the floor, said to be overcommitted.
    [128, AUTO, 16, 16, 16, true],
    // Given values are kept; auto takes its half whatever the other is.
    [1024, { proxy: 100, upstream: 'auto' }, 100, 416, 64, false],
    [1024, { proxy: 'auto', upstream: 50 }, 416, 50, 64, false],
    [1024, { proxy: 800, upstream: 'auto' }, 800, 416, 64, true],
    [65_536, { proxy: 10_000, upstream: 20_000 }, 10_000, 20_000, 1024, false],
  ] as const)(
    'limit %i, %o: proxy %i, upstream %i, api %i, overcommitted %o',
    (limit, settings, proxy, upstream, api, over) => {
      expect(connectionLimits(settings, limit)).toEqual({
        descriptorLimit: limit,
        proxy,
        upstream,
        api,
        overcommitted: over,
      });
    },
  );

  it('leaves room for the process’s own files at every limit', () => {
    for (let limit = 256; limit <= 1 << 20; limit *= 2) {
      const { proxy = 0, upstream = 0, api = 0 } = connectionLimits(AUTO, limit);
      expect(proxy + upstream + api, String(limit)).toBeLessThanOrEqual(limit - 128);
    }
  });

  it('an unknown limit caps nothing unless told to', () => {
    expect(connectionLimits(AUTO, undefined)).toEqual({
      descriptorLimit: undefined,
      proxy: undefined,
      upstream: undefined,
      api: undefined,
      overcommitted: false,
    });
    expect(connectionLimits({ proxy: 500, upstream: 200 }, undefined)).toMatchObject({
      proxy: 500,
      upstream: 200,
    });
  });
});

describe('proxy_max_connections and upstream_max_connections', () => {
  const kind = SETTINGS.find((s) => s.name === 'proxy_max_connections')?.kind;

  it.each([
    ['auto', 'auto'],
    ['1', 1],
    [20_000, 20_000],
    ['1000000', 1_000_000],
  ] as const)('accept %o', (raw, value) => {
    expect(kind && convertSetting(kind, raw)).toEqual({ ok: true, value });
  });

  it.each([['0'], [0], ['-5'], ['1.5'], ['many'], ['1000001'], [true]])(
    'refuse %o, saying what auto means',
    (raw) => {
      expect(kind && convertSetting(kind, raw)).toEqual({
        ok: false,
        accepted: 'a whole number from 1 to 1000000, or auto (from the descriptor limit)',
      });
    },
  );

  it('auto is resolved from the descriptor limit the loader is given or reads', () => {
    const config = loadConfig({ flags: {}, env: {}, descriptorLimit: 1024 });
    expect(config.connections).toMatchObject({ descriptorLimit: 1024, proxy: 416, upstream: 416, api: 64 });
    expect(config.sources.proxy_max_connections).toBe('default');
    const given = loadConfig({
      flags: { proxy_max_connections: '300' },
      env: { TOKENPROXY_UPSTREAM_MAX_CONNECTIONS: '200' },
      descriptorLimit: 1024,
    });
    expect(given.connections).toMatchObject({ proxy: 300, upstream: 200 });
    expect(loadConfig({ flags: {}, env: {}, descriptorLimit: null }).connections.proxy).toBeUndefined();
    // Read from the process itself when not given (Linux: /proc/self/limits).
    if (process.platform === 'linux')
      expect(loadConfig({ flags: {}, env: {} }).connections.descriptorLimit).toBeGreaterThan(0);
  });

  it('a bad value stops the start, naming the setting', () => {
    expect(() => loadConfig({ flags: { upstream_max_connections: '0' }, env: {} })).toThrow(ConfigError);
    expect(() => loadConfig({ flags: { upstream_max_connections: '0' }, env: {} })).toThrow(
      /Setting "upstream_max_connections" has an invalid value "0" \(from flag --upstream-max-connections\)/,
    );
  });
});
