import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSetting } from '../../src/config/convert.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import type { SettingKind } from '../../src/config/settings.js';

function configFile(content: unknown): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tokenproxy-config-'));
  const file = path.join(dir, 'config.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

describe('convertSetting', () => {
  const port: SettingKind = { type: 'port' };
  const bool: SettingKind = { type: 'boolean' };
  const duration: SettingKind = { type: 'duration' };
  const pg: SettingKind = { type: 'url', protocols: ['postgres:', 'postgresql:'] };
  const level: SettingKind = { type: 'enum', values: ['info', 'debug'] };
  const workers: SettingKind = { type: 'count_or_auto', max: 256 };
  it.each([
    [port, '8443', 8443],
    [port, 8443, 8443],
    [port, '0', 0],
    [bool, 'true', true],
    [bool, 'no', false],
    [bool, false, false],
    [duration, '10s', 10_000],
    [duration, '500ms', 500],
    [duration, '2m', 120_000],
    [pg, 'postgres://u@h/db', 'postgres://u@h/db'],
    [pg, 'postgresql://h:5433/db', 'postgresql://h:5433/db'],
    [level, 'debug', 'debug'],
    [workers, '1', 1],
    [workers, '256', 256],
    [workers, 4, 4],
    [workers, 'auto', 'auto'],
  ] as const)('%o accepts %o', (kind, raw, value) => {
    expect(convertSetting(kind, raw)).toEqual({ ok: true, value });
  });
  it.each([
    [port, 'abc'],
    [port, '65536'],
    [port, '-1'],
    [port, 8443.5],
    [port, '84 43'],
    [bool, 'maybe'],
    [bool, 1],
    [duration, '10'],
    [duration, 'soon'],
    [pg, 'mysql://h/db'],
    [pg, 'not a url'],
    [level, 'loud'],
    [level, 3],
    [workers, '0'],
    [workers, '257'],
    [workers, 'abc'],
    [workers, 2.5],
    [workers, 'AUTO'],
    [workers, true],
  ] as const)('%o refuses %o and says what is accepted', (kind, raw) => {
    const result = convertSetting(kind, raw);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.accepted.length).toBeGreaterThan(5);
  });

  it('says what a boolean accepts where it came from: a file value is told JSON, not 1/0', () => {
    expect(convertSetting(bool, 1)).toEqual({ ok: false, accepted: 'true or false (a JSON boolean)' });
    expect(convertSetting(bool, 'maybe')).toEqual({
      ok: false,
      accepted: 'true or false (also 1/0, yes/no)',
    });
  });
});

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({ flags: {}, env: {} });
    expect(config).toMatchObject({
      host: '127.0.0.1',
      apiPort: 8443,
      proxyPort: 8444,
      dataDir: path.resolve('./tokenproxy-data'),
      database: undefined,
      insecureHttp: false,
      drainTimeoutMs: 10_000,
      workers: 1,
      redis: undefined,
      logLevel: 'info',
      logRequests: false,
      trustProxy: [],
    });
    expect(config.sources.api_port).toBe('default');
    expect(config.sources.database).toBe('unset');
  });

  it('precedence is flag > environment > file > default, per setting', () => {
    const file = configFile({ api_port: 1001, proxy_port: 1002, log_level: 'warn' });
    const config = loadConfig({
      flags: { api_port: '3001' },
      env: { TOKENPROXY_API_PORT: '2001', TOKENPROXY_PROXY_PORT: '2002' },
      configFile: file,
    });
    expect(config.apiPort).toBe(3001);
    expect(config.proxyPort).toBe(2002);
    expect(config.logLevel).toBe('warn');
    expect(config.drainTimeoutMs).toBe(10_000);
    expect(config.sources).toMatchObject({
      api_port: 'flag',
      proxy_port: 'env',
      log_level: 'file',
      drain_timeout: 'default',
    });
  });

  it('workers: auto is one per CPU; a number from the file is taken as is', () => {
    expect(loadConfig({ flags: { workers: 'auto' }, env: {} }).workers).toBe(os.availableParallelism());
    expect(loadConfig({ flags: {}, env: {}, configFile: configFile({ workers: 3 }) }).workers).toBe(3);
    expect(loadConfig({ flags: {}, env: { TOKENPROXY_WORKERS: '2' } }).workers).toBe(2);
  });

  it('is frozen', () => {
    const config = loadConfig({ flags: {}, env: {} });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.providers)).toBe(true);
  });

  it('country_header with trust_proxy is accepted', () => {
    const config = loadConfig({
      flags: { country_header: 'CF-IPCountry', trust_proxy: 'loopback' },
      env: {},
    });
    expect(config.countryHeader).toBe('cf-ipcountry');
  });

  it('an empty environment variable counts as unset', () => {
    expect(loadConfig({ flags: {}, env: { TOKENPROXY_API_PORT: '' } }).apiPort).toBe(8443);
  });

  it.each([
    [
      { flags: { api_port: 'x' } },
      /"api_port" has an invalid value "x" \(from flag --api-port\); expected an integer port/,
    ],
    [
      { env: { TOKENPROXY_DRAIN_TIMEOUT: 'forever' } },
      /"drain_timeout".*TOKENPROXY_DRAIN_TIMEOUT.*a duration/,
    ],
    [{ flags: { api_port: '9000', proxy_port: '9000' } }, /"api_port" and "proxy_port" must differ/],
    [{ flags: { tls_key: 'k.pem' } }, /"tls_cert" and "tls_key" go together/],
    [{ flags: { trust_proxy: '10.0.0.0/33' } }, /"trust_proxy"/],
    [
      { flags: { expiry_sweep_interval: '0' } },
      /"expiry_sweep_interval" has an invalid value "0" \(from flag --expiry-sweep-interval\); expected a duration from 1s to 1m/,
    ],
    [{ env: { TOKENPROXY_EXPIRY_SWEEP_INTERVAL: '2m' } }, /"expiry_sweep_interval".*from 1s to 1m/],
    [
      { env: { TOKENPROXY_COUNTRY_HEADER: 'cf-ipcountry' } },
      /"country_header" needs setting "trust_proxy": the header is believed only from your edge's addresses.*--trust-proxy or TOKENPROXY_TRUST_PROXY/,
    ],
    [{ flags: { pop: 'has space' } }, /"pop"/],
    [{ flags: { database: 'postgres://user:s3cret@db/x', api_port: 'bad' } }, /"api_port"/],
  ])('refuses %o', (input, message) => {
    expect(() => loadConfig({ flags: {}, env: {}, ...input })).toThrow(message);
    expect(() => loadConfig({ flags: {}, env: {}, ...input })).toThrow(ConfigError);
  });

  it('never echoes the value of a secret setting', () => {
    try {
      loadConfig({ flags: { database: 'mysql://root:s3cret@db/x' }, env: {} });
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toContain('"database"');
      expect((err as Error).message).not.toContain('s3cret');
    }
  });

  it('reads a config file that starts with a byte order mark', () => {
    const file = configFile('\uFEFF{"api_port": 9443}');
    expect(loadConfig({ flags: {}, env: {}, configFile: file }).apiPort).toBe(9443);
  });

  it.each([
    ['not json', /not valid JSON: line 1, column 1: a value was expected/],
    // V8's own message would quote the text around the mistake: here, part of the PIN.
    ['{"pkcs11_pin": S3cr3tPIN}', /not valid JSON: line 1, column 16: [^S]*$/],
    ['{"budget_default_reservation": 1e400}', /invalid value Infinity \(a number too large\)/],
    ['[1,2]', /must hold a JSON object/],
    [{ apiPort: 1 }, /unknown key "apiPort"/],
    [{ 'api-port': 1 }, /unknown key "api-port" \(did you mean "api_port"\?\)/],
    [{ api_port: 'x' }, /"api_port" has an invalid value "x" \(from key "api_port" of .*config.json\)/],
    [{ providers: [] }, /"providers".*must be an object/],
    [{ providers: { Acme: { base_url: 'https://a.example', auth: 'bearer' } } }, /provider id "Acme"/],
    [{ providers: { acme: { base_url: 'http://a.example', auth: 'bearer' } } }, /must start with https:\/\//],
    [
      { providers: { acme: { base_url: 'https://a.example', auth: 'basic' } } },
      /auth "basic" is not accepted/,
    ],
    [
      { providers: { acme: { base_url: 'https://a.example', auth: 'header:authorization' } } },
      /is not accepted/,
    ],
    [{ providers: { acme: { base_url: 'https://a.example' } } }, /provider "acme" field "auth"/],
    [{ providers: { acme: { base_url: 'https://a.example', auth: 'bearer', extra: 1 } } }, /provider "acme"/],
  ])('config file %o is refused', (content, message) => {
    expect(() => loadConfig({ flags: {}, env: {}, configFile: configFile(content) })).toThrow(message);
  });

  it('reads custom providers from the file', () => {
    const file = configFile({
      providers: { acme: { base_url: 'https://api.acme.example/base/', auth: 'header:X-Acme-Key' } },
    });
    expect(loadConfig({ flags: {}, env: {}, configFile: file }).providers).toEqual([
      {
        id: 'acme',
        baseUrl: 'https://api.acme.example/base',
        auth: { kind: 'header', header: 'x-acme-key' },
        builtin: false,
      },
    ]);
  });

  it('a missing config file names the setting', () => {
    expect(() => loadConfig({ flags: {}, env: {}, configFile: '/nonexistent/tokenproxy.json' })).toThrow(
      /Setting "config": cannot read \/nonexistent\/tokenproxy.json \(ENOENT\)/,
    );
  });

  it('plans: the file may shrink or lift limits per plan; unnamed fields keep their default', () => {
    const file = configFile({
      plans: { free: { requests_per_month: 10 }, unlimited: { active_tokens: 50 } },
    });
    expect(loadConfig({ flags: {}, env: {}, configFile: file }).plans).toEqual({
      free: { activeTokens: 3, requestsPerMonth: 10 },
      unlimited: { activeTokens: 50, requestsPerMonth: null },
    });
    expect(loadConfig({ flags: {}, env: {} }).plans.free).toEqual({
      activeTokens: 3,
      requestsPerMonth: 100_000,
    });
  });

  it('plans of your own sit beside the built-in ones; null means no cap', () => {
    const file = configFile({
      plans: {
        team: { active_tokens: 50, requests_per_month: 2_000_000 },
        'big-co_2': { active_tokens: null, requests_per_month: 10 },
        free: { active_tokens: 1 },
      },
    });
    expect(loadConfig({ flags: {}, env: {}, configFile: file }).plans).toEqual({
      free: { activeTokens: 1, requestsPerMonth: 100_000 },
      unlimited: { activeTokens: null, requestsPerMonth: null },
      team: { activeTokens: 50, requestsPerMonth: 2_000_000 },
      'big-co_2': { activeTokens: null, requestsPerMonth: 10 },
    });
  });

  it.each([
    [{ plans: { gold: {} } }, /plan "gold" must give both "active_tokens" and "requests_per_month"/],
    [{ plans: { gold: { active_tokens: 5 } } }, /plan "gold" must give both/],
    [{ plans: { Gold: { active_tokens: 5, requests_per_month: 5 } } }, /invalid plan name "Gold"/],
    [{ plans: { 'a b': { active_tokens: 5, requests_per_month: 5 } } }, /invalid plan name "a b"/],
    [{ plans: { [`p${'x'.repeat(32)}`]: { active_tokens: 1, requests_per_month: 1 } } }, /invalid plan name/],
    [{ plans: { team: { active_tokens: 1.5, requests_per_month: 1 } } }, /plan "team" field "active_tokens"/],
    [{ plans: { team: { active_tokens: '5', requests_per_month: 1 } } }, /plan "team" field "active_tokens"/],
    [
      { plans: { team: { active_tokens: 5, requests_per_month: 1, seats: 3 } } },
      /plan "team" unknown field "seats"/,
    ],
    [{ plans: { team: 5 } }, /plan "team": expected \{"active_tokens"/],
    [{ plans: { free: { active_tokens: -1 } } }, /plan "free" field "active_tokens"/],
    [{ plans: { free: { tokens: 1 } } }, /plan "free"/],
    [{ plans: [] }, /"plans".*must be an object/],
  ])('plans %o are refused', (content, message) => {
    expect(() => loadConfig({ flags: {}, env: {}, configFile: configFile(content) })).toThrow(message);
  });

  it('webhook_retry_schedule becomes a list of delays', () => {
    const config = loadConfig({ flags: { webhook_retry_schedule: '100ms, 1s,2m' }, env: {} });
    expect(config.webhookRetrySchedule).toEqual([100, 1000, 120_000]);
    expect(() => loadConfig({ flags: { webhook_retry_schedule: '5s,,1m' }, env: {} })).toThrow(
      /"webhook_retry_schedule".*comma-separated durations/,
    );
  });
});
