import { availableParallelism, hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Provider } from '../providers/providers.js';
import type { PlanTable } from '../accounts/plans.js';
import { parsePlans } from '../accounts/plan-config.js';
import { parseDuration } from '../rules/duration.js';
import { parseRetentionPeriod, type Retention } from '../rules/retention-period.js';
import { parseTrustProxy } from '../rules/ip-match.js';
import { readDescriptorLimit } from '../runtime/descriptor-limit.js';
import { loadDefaultPrices, mergePrices, parsePrices, type PriceData } from '../usage/prices.js';
import { ConfigError } from './config-error.js';
import { connectionLimits, type ConnectionLimits } from './connection-limits.js';
import { convertSetting } from './convert.js';
import { parseProviders, readConfigFile } from './config-file.js';
import { SETTINGS, envName, flagName, type SettingName } from './settings.js';

/** The validated, frozen configuration. Built once at start and passed down; never imported. */
export interface Config {
  readonly host: string;
  readonly apiPort: number;
  readonly proxyPort: number;
  readonly dataDir: string;
  readonly database: string | undefined;
  readonly tlsCert: string | undefined;
  readonly tlsKey: string | undefined;
  readonly insecureHttp: boolean;
  /** Explicit public addresses; when unset, derived from the bound address by `publicUrl`. */
  readonly publicApiUrl: string | undefined;
  readonly publicProxyUrl: string | undefined;
  readonly providerCa: string | undefined;
  /** CIDRs/IPs whose X-Forwarded-For is believed (canonical entries; empty = none). */
  readonly trustProxy: readonly string[];
  readonly pop: string;
  /** Lower-case header name, or undefined. */
  readonly countryHeader: string | undefined;
  readonly geoipDb: string | undefined;
  readonly logRequests: boolean;
  readonly upstreamConnectTimeoutMs: number;
  readonly upstreamHeadersTimeoutMs: number;
  readonly upstreamBodyTimeoutMs: number;
  /**
   * `proxy_max_connections` and `upstream_max_connections` with `auto` resolved from the process's
   * descriptor limit, and the management listener's cap (src/config/connection-limits.ts).
   */
  readonly connections: ConnectionLimits;
  readonly smtpUrl: string | undefined;
  readonly smtpFrom: string;
  readonly allowPrivateWebhooks: boolean;
  /** Delays in ms between delivery attempts. */
  readonly webhookRetrySchedule: readonly number[];
  readonly webhookDisableAfterMs: number;
  readonly expirySweepIntervalMs: number;
  /** Plan limits: the built-in table, with the config file's `plans` applied. */
  readonly plans: PlanTable;
  readonly kek: 'local' | 'pkcs11';
  /**
   * The PKCS#11 settings: always with `kek: pkcs11`; with `kek: local` when all three are given, so
   * a local server can load the HSM version a `kek migrate` run beside it makes.
   */
  readonly pkcs11: Pkcs11Settings | undefined;
  readonly drainTimeoutMs: number;
  /** Serving processes (`auto` resolved to the CPU count); above 1, `serve` runs a primary (src/cluster). */
  readonly workers: number;
  readonly logLevel: string;
  readonly providers: readonly Provider[];
  // ---- limits (src/limits, docs/limits.md) ----
  readonly anomalySpikeFactor: number;
  readonly anomalyMinRequests: number;
  readonly anomalyDistinctIps: number;
  readonly anomalyWarmupMs: number;
  // ---- cluster (src/cluster, docs/cluster.md) ----
  /** Redis URL; secret (it may hold a password). Undefined: one process, in-memory counters. */
  readonly redis: string | undefined;
  readonly redisCa: string | undefined;
  // ---- usage and budgets (src/usage, docs/usage.md) ----
  /** USD per million tokens by provider and model: prices/default.json with the file's `prices` applied. */
  readonly prices: PriceData;
  /** Output tokens a budgeted request reserves when its body names no maximum. */
  readonly budgetDefaultReservation: number;
  /** How long history is kept (src/retention): request logs, anomalies, finished events; rollups. */
  readonly logRetention: Retention;
  readonly rollupRetention: Retention;
  /** Where each setting came from, for the start-up banner. Values of secret settings are not kept. */
  readonly sources: Readonly<Record<SettingName, Source>>;
}

export interface Pkcs11Settings {
  readonly module: string;
  readonly tokenLabel: string;
  /** Secret: never printed or logged. */
  readonly pin: string;
  readonly keyLabel: string;
}

export type Source = 'flag' | 'env' | 'file' | 'default' | 'unset';

/** A bad setting. The message names the setting, where it came from and what is accepted. */
export { ConfigError };

export interface ConfigInput {
  /** Flags given on the command line, by setting name (only those the user gave). */
  readonly flags: Readonly<Record<string, string | boolean | undefined>>;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Path of the JSON config file (`--config` / `TOKENPROXY_CONFIG`). */
  readonly configFile?: string | undefined;
  /** The process's descriptor limit for `auto` connection caps; omitted: read; null: unknown. */
  readonly descriptorLimit?: number | null | undefined;
}

function retention(name: string, text: string): Retention {
  const parsed = parseRetentionPeriod(text);
  // The setting's pattern admits only these forms; the range is checked here.
  if (!parsed.ok) throw new ConfigError(`Setting "${name}" ${JSON.stringify(text)}: ${parsed.message}.`);
  return { ms: parsed.ms, text: parsed.canonical };
}

function retrySchedule(text: string): number[] {
  return text.split(',').map((part) => {
    const parsed = parseDuration(part.trim());
    // The setting's pattern already admits only durations; this keeps the types honest.
    if (!parsed.ok) throw new ConfigError(`Setting "webhook_retry_schedule": ${parsed.message}.`);
    return parsed.ms;
  });
}

export function loadConfig(input: ConfigInput): Config {
  const file = input.configFile ? readConfigFile(input.configFile) : {};
  const values: Record<string, string | number | boolean | undefined> = {};
  const sources: Record<string, Source> = {};

  for (const spec of SETTINGS) {
    const fromFlag = input.flags[spec.name];
    const fromEnv = input.env[envName(spec.name)];
    const fromFile = file[spec.name];
    let raw: unknown;
    let source: Source;
    let where: string;
    if (fromFlag !== undefined) {
      [raw, source, where] = [fromFlag, 'flag', `flag ${flagName(spec.name)}`];
    } else if (fromEnv !== undefined && fromEnv !== '') {
      [raw, source, where] = [fromEnv, 'env', `environment variable ${envName(spec.name)}`];
    } else if (fromFile !== undefined) {
      [raw, source, where] = [fromFile, 'file', `key "${spec.name}" of ${input.configFile ?? ''}`];
    } else if ('default' in spec) {
      [raw, source, where] = [spec.default, 'default', 'default'];
    } else {
      sources[spec.name] = 'unset';
      continue;
    }
    const converted = convertSetting(spec.kind, raw);
    if (!converted.ok) {
      // JSON.stringify writes a number too large for JSON (1e309 reads as Infinity) as "null".
      const shown =
        'secret' in spec && spec.secret
          ? '(value hidden)'
          : typeof raw === 'number' && !Number.isFinite(raw)
            ? `${String(raw)} (a number too large)`
            : JSON.stringify(raw);
      throw new ConfigError(
        `Setting "${spec.name}" has an invalid value ${shown} (from ${where}); expected ${converted.accepted}.`,
      );
    }
    values[spec.name] = converted.value;
    sources[spec.name] = source;
  }

  const tlsCert = values.tls_cert as string | undefined;
  const tlsKey = values.tls_key as string | undefined;
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new ConfigError(
      'Settings "tls_cert" and "tls_key" go together: give both (your certificate and its key) or neither (a self-signed certificate is generated).',
    );
  }

  if (typeof values.country_header === 'string' && values.trust_proxy === undefined) {
    throw new ConfigError(
      `Setting "country_header" needs setting "trust_proxy": the header is believed only from your edge's ` +
        `addresses, or any client could send it and claim any country. Set trust_proxy to the addresses ` +
        `your edge connects from (${flagName('trust_proxy')} or ${envName('trust_proxy')}), or leave country_header unset.`,
    );
  }

  const host = values.host as string;
  const insecureHttp = values.insecure_http as boolean;
  const apiPort = values.api_port as number;
  const proxyPort = values.proxy_port as number;
  if (apiPort === proxyPort && apiPort !== 0) {
    throw new ConfigError(`Settings "api_port" and "proxy_port" must differ; both are ${apiPort}.`);
  }

  const config: Config = {
    host,
    apiPort,
    proxyPort,
    dataDir: resolve(values.data_dir as string),
    database: values.database as string | undefined,
    tlsCert: tlsCert === undefined ? undefined : resolve(tlsCert),
    tlsKey: tlsKey === undefined ? undefined : resolve(tlsKey),
    insecureHttp,
    publicApiUrl: optionalUrl(values.public_api_url),
    publicProxyUrl: optionalUrl(values.public_proxy_url),
    providerCa: optionalPath(values.provider_ca),
    trustProxy: trustProxyFrom(values.trust_proxy),
    pop: typeof values.pop === 'string' ? values.pop : defaultPop(),
    countryHeader:
      typeof values.country_header === 'string' ? values.country_header.toLowerCase() : undefined,
    geoipDb: optionalPath(values.geoip_db),
    logRequests: values.log_requests as boolean,
    upstreamConnectTimeoutMs: values.upstream_connect_timeout as number,
    upstreamHeadersTimeoutMs: values.upstream_headers_timeout as number,
    upstreamBodyTimeoutMs: values.upstream_body_timeout as number,
    connections: connectionLimits(
      {
        proxy: values.proxy_max_connections as number | 'auto',
        upstream: values.upstream_max_connections as number | 'auto',
      },
      input.descriptorLimit === undefined ? readDescriptorLimit() : (input.descriptorLimit ?? undefined),
    ),
    smtpUrl: typeof values.smtp_url === 'string' ? values.smtp_url : undefined,
    smtpFrom: values.smtp_from as string,
    allowPrivateWebhooks: values.allow_private_webhooks as boolean,
    webhookRetrySchedule: retrySchedule(values.webhook_retry_schedule as string),
    webhookDisableAfterMs: values.webhook_disable_after as number,
    expirySweepIntervalMs: values.expiry_sweep_interval as number,
    plans: parsePlans(file.plans, input.configFile),
    kek: values.kek as 'local' | 'pkcs11',
    pkcs11: pkcs11From(values),
    drainTimeoutMs: values.drain_timeout as number,
    workers: values.workers === 'auto' ? availableParallelism() : (values.workers as number),
    logLevel: values.log_level as string,
    providers: parseProviders(file.providers, input.configFile),
    anomalySpikeFactor: values.anomaly_spike_factor as number,
    anomalyMinRequests: values.anomaly_min_requests as number,
    anomalyDistinctIps: values.anomaly_distinct_ips as number,
    anomalyWarmupMs: values.anomaly_warmup as number,
    redis: typeof values.redis === 'string' ? values.redis : undefined,
    redisCa: redisCaFrom(values),
    prices: pricesFrom(file.prices, input.configFile),
    budgetDefaultReservation: values.budget_default_reservation as number,
    logRetention: retention('log_retention', values.log_retention as string),
    rollupRetention: retention('rollup_retention', values.rollup_retention as string),
    sources: sources as Record<SettingName, Source>,
  };
  return deepFreeze(config);
}

/** The shipped default table with the config file's `prices` applied (both validated at start). */
function pricesFrom(raw: unknown, path: string | undefined): PriceData {
  const defaults = loadDefaultPrices();
  if (raw === undefined) return defaults;
  return mergePrices(defaults, parsePrices(raw, `key "prices" of ${path ?? 'the config file'}`));
}

function pkcs11From(values: Readonly<Record<string, unknown>>): Pkcs11Settings | undefined {
  const required = ['pkcs11_module', 'pkcs11_token_label', 'pkcs11_pin'] as const;
  if (values.kek !== 'pkcs11' && required.some((name) => typeof values[name] !== 'string')) return undefined;
  for (const name of ['pkcs11_module', 'pkcs11_token_label', 'pkcs11_pin'] as const) {
    if (typeof values[name] !== 'string') {
      throw new ConfigError(
        `Setting "${name}" is required with kek "pkcs11" (flag ${flagName(name)}, environment ${envName(name)}${
          name === 'pkcs11_pin' ? ', which is where the PIN belongs' : ''
        }).`,
      );
    }
  }
  return {
    module: resolve(values.pkcs11_module as string),
    tokenLabel: values.pkcs11_token_label as string,
    pin: values.pkcs11_pin as string,
    keyLabel: values.pkcs11_key_label as string,
  };
}

function redisCaFrom(values: Readonly<Record<string, unknown>>): string | undefined {
  const ca = optionalPath(values.redis_ca as string | undefined);
  if (ca !== undefined && typeof values.redis === 'string' && !values.redis.startsWith('rediss:')) {
    throw new ConfigError(
      'Setting "redis_ca" applies to a TLS connection only: give "redis" as a rediss:// URL, or drop "redis_ca".',
    );
  }
  return ca;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost', '[::1]']);
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]']);

function optionalPath(value: string | number | boolean | undefined): string | undefined {
  return typeof value === 'string' ? resolve(value) : undefined;
}

function trustProxyFrom(value: string | number | boolean | undefined): string[] {
  if (typeof value !== 'string') return [];
  const parsed = parseTrustProxy(value);
  if (!parsed.ok) throw new ConfigError(`Setting "trust_proxy": ${parsed.message}.`);
  return parsed.value;
}

/** DESIGN §10: `pop` defaults to the machine's host name (cut to the accepted form). */
function defaultPop(): string {
  return (
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .slice(0, 64) || 'local'
  );
}

function optionalUrl(value: string | number | boolean | undefined): string | undefined {
  return typeof value === 'string' ? stripSlash(value) : undefined;
}

/** DESIGN §10: `https://localhost:<port>` for a loopback bind, else the bind host. */
export function publicUrl(host: string, port: number, insecure: boolean): string {
  const scheme = insecure ? 'http' : 'https';
  let name = host;
  if (LOOPBACK_HOSTS.has(host)) name = 'localhost';
  else if (WILDCARD_HOSTS.has(host))
    name = hostname(); // a wildcard address is not reachable as such
  else if (host.includes(':') && !host.startsWith('[')) name = `[${host}]`;
  return `${scheme}://${name}:${port}`;
}

function stripSlash(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
