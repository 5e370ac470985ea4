/**
 * Every setting tokenproxy reads, in one table. Each has one name spelled three ways (DESIGN §2):
 * flag `--api-port`, environment `TOKENPROXY_API_PORT`, config-file key `api_port`. The CLI flags
 * and the loader are derived from this list; the README's configuration table is written by hand and
 * held to it by test/docs (names, defaults, which are secret).
 */

export type SettingKind =
  | { readonly type: 'string'; readonly pattern?: RegExp; readonly accepted?: string }
  | { readonly type: 'path' }
  | { readonly type: 'port' }
  | { readonly type: 'boolean' }
  /** `min`/`max` in ms, when the setting has bounds of its own (beyond the parser's). */
  | { readonly type: 'duration'; readonly min?: number; readonly max?: number }
  | { readonly type: 'number'; readonly min: number; readonly max: number; readonly integer: boolean }
  | { readonly type: 'enum'; readonly values: readonly string[] }
  | { readonly type: 'url'; readonly protocols: readonly string[] }
  /**
   * A whole number from 1 to `max`, or `auto` (kept as the string; the loader resolves it). `auto`
   * says what auto means, for the message that refuses a bad value (default: one per CPU).
   */
  | { readonly type: 'count_or_auto'; readonly max: number; readonly auto?: string };

export interface SettingSpec {
  readonly name: string;
  readonly kind: SettingKind;
  /** Default value as it would be written in the config file; undefined = unset. */
  readonly default?: string | number | boolean;
  readonly description: string;
  /** Secret values are never printed (e.g. when reporting which source a setting came from). */
  readonly secret?: boolean;
}

export const SETTINGS = [
  {
    name: 'host',
    kind: { type: 'string', pattern: /^[^\s/]+$/, accepted: 'a host name or IP address to bind' },
    default: '127.0.0.1',
    description: 'Address both listeners bind to.',
  },
  {
    name: 'api_port',
    kind: { type: 'port' },
    default: 8443,
    description: 'Port of the management listener (REST API, health, metrics). `0` picks a free port.',
  },
  {
    name: 'proxy_port',
    kind: { type: 'port' },
    default: 8444,
    description: 'Port of the proxy listener. `0` picks a free port.',
  },
  {
    name: 'data_dir',
    kind: { type: 'path' },
    default: './tokenproxy-data',
    description: 'Directory for the SQLite store, the local master key and the generated TLS certificate.',
  },
  {
    name: 'database',
    kind: { type: 'url', protocols: ['postgres:', 'postgresql:'] },
    description: 'PostgreSQL URL (`postgres://user@host/db`). Unset: SQLite file in the data dir.',
    secret: true,
  },
  {
    name: 'tls_cert',
    kind: { type: 'path' },
    description:
      'PEM certificate for both listeners (with `tls_key`). Unset: a self-signed one is generated once.',
  },
  { name: 'tls_key', kind: { type: 'path' }, description: 'PEM private key matching `tls_cert`.' },
  {
    name: 'insecure_http',
    kind: { type: 'boolean' },
    default: false,
    description:
      'Serve plain HTTP instead of TLS 1.3 (only behind a TLS-terminating load balancer). Logs a warning.',
  },
  {
    name: 'public_api_url',
    kind: { type: 'url', protocols: ['https:', 'http:'] },
    description:
      'Address of the management listener as users reach it (links). Default: derived from host and port.',
  },
  {
    name: 'public_proxy_url',
    kind: { type: 'url', protocols: ['https:', 'http:'] },
    description: 'Address of the proxy as callers reach it; `proxy_base_url` of tokens is built from it.',
  },
  {
    name: 'provider_ca',
    kind: { type: 'path' },
    description:
      'PEM file of extra CAs trusted for upstream connections (private providers, tests). Public CAs stay trusted.',
  },
  {
    name: 'trust_proxy',
    kind: {
      type: 'string',
      accepted: 'comma-separated IPs, CIDR ranges or the names loopback, private, linklocal',
    },
    description:
      'Proxies whose X-Forwarded-For is believed. Client IP = right-most address not in this list. Unset: the socket address.',
  },
  {
    name: 'pop',
    kind: {
      type: 'string',
      pattern: /^[A-Za-z0-9._-]{1,64}$/,
      accepted: '1 to 64 letters, digits, dots, dashes or underscores',
    },
    description: 'Code of this edge location, written into every request-log record. Default: the host name.',
  },
  {
    name: 'country_header',
    kind: {
      type: 'string',
      pattern: /^[A-Za-z0-9-]{1,64}$/,
      accepted: 'an HTTP header name such as cf-ipcountry',
    },
    description: 'Trusted header set by your edge that carries the client country (e.g. `cf-ipcountry`).',
  },
  {
    name: 'geoip_db',
    kind: { type: 'path' },
    description: 'MaxMind-format `.mmdb` country database used when `country_header` is unset or absent.',
  },
  {
    name: 'log_requests',
    kind: { type: 'boolean' },
    default: false,
    description: 'Also print every request-log record as a JSON line on stdout.',
  },
  {
    name: 'upstream_connect_timeout',
    kind: { type: 'duration' },
    default: '10s',
    description: 'How long to wait for a TCP+TLS connection to the provider before answering 502.',
  },
  {
    name: 'upstream_headers_timeout',
    kind: { type: 'duration' },
    default: '10m',
    description: 'How long the provider may take to start its answer (long LLM generations) before 504.',
  },
  {
    name: 'upstream_body_timeout',
    kind: { type: 'duration' },
    default: '5m',
    description:
      'Longest silence allowed between two chunks of a provider answer before the response is ended.',
  },
  // ---- connections and file descriptors (docs/operations.md) ----
  {
    name: 'proxy_max_connections',
    kind: { type: 'count_or_auto', max: 1_000_000, auto: 'from the descriptor limit' },
    default: 'auto',
    description:
      "Open connections the proxy listener accepts; beyond, a new one is closed at once. `auto`: a share of the process's descriptor limit (`LimitNOFILE`).",
  },
  {
    name: 'upstream_max_connections',
    kind: { type: 'count_or_auto', max: 1_000_000, auto: 'from the descriptor limit' },
    default: 'auto',
    description:
      "Connections to one provider origin; requests beyond wait for a free one. `auto`: a share of the descriptor limit, as large as the proxy's.",
  },
  {
    name: 'smtp_url',
    kind: { type: 'url', protocols: ['smtp:', 'smtps:'] },
    description:
      'SMTP server for alert e-mails (`smtps://user:pass@mail.example.com`). Unset: e-mail alerts are off.',
    secret: true,
  },
  {
    name: 'smtp_from',
    kind: {
      type: 'string',
      pattern: /^[^\s@]+@[^\s@]+$|^.*<[^\s@]+@[^\s@]+>$/,
      accepted: 'an e-mail address',
    },
    default: 'tokenproxy@localhost',
    description: 'Sender address of alert e-mails.',
  },
  {
    name: 'allow_private_webhooks',
    kind: { type: 'boolean' },
    default: false,
    description:
      'Allow webhook URLs that resolve to private, loopback or link-local addresses (tests, internal receivers).',
  },
  {
    name: 'webhook_retry_schedule',
    kind: {
      type: 'string',
      pattern: /^\s*\d+\s*(ms|s|m|h|d)\s*(,\s*\d+\s*(ms|s|m|h|d)\s*)*$/,
      accepted: 'comma-separated durations such as 5s,5m,30m,2h,5h,10h,10h',
    },
    default: '5s,5m,30m,2h,5h,10h,10h',
    description:
      'Delays between delivery attempts of a webhook or e-mail; after the last one it is marked failed.',
  },
  {
    name: 'webhook_disable_after',
    kind: { type: 'duration' },
    default: '5d',
    description: 'A webhook endpoint whose deliveries have all failed for this long is disabled.',
  },
  {
    name: 'expiry_sweep_interval',
    // At most a minute: DESIGN §6 promises the event within 60 s. At least a second: 0 polled the
    // store without pause.
    kind: { type: 'duration', min: 1000, max: 60_000 },
    default: '10s',
    description:
      'How often expired tokens are marked `expired` and their `token.expired` events emitted (1s to 1m).',
  },
  {
    name: 'kek',
    kind: { type: 'enum', values: ['local', 'pkcs11'] },
    default: 'local',
    description:
      'Key-encryption key provider. `local`: `<data_dir>/master.key` or `TOKENPROXY_MASTER_KEY`. `pkcs11`: a key inside an HSM (the `pkcs11_*` settings).',
  },
  {
    name: 'pkcs11_module',
    kind: { type: 'path' },
    description: 'With `kek: pkcs11`: path of the PKCS#11 library, e.g. `/usr/lib/softhsm/libsofthsm2.so`.',
  },
  {
    name: 'pkcs11_token_label',
    kind: { type: 'string', pattern: /^.{1,32}$/, accepted: 'the token label, 1 to 32 characters' },
    description: 'With `kek: pkcs11`: label of the HSM token that holds the KEK.',
  },
  {
    name: 'pkcs11_pin',
    kind: { type: 'string', pattern: /^.{1,255}$/, accepted: 'the user PIN of the token' },
    description: 'With `kek: pkcs11`: the token user PIN. Give it as `TOKENPROXY_PKCS11_PIN`; never printed.',
    secret: true,
  },
  {
    name: 'pkcs11_key_label',
    kind: { type: 'string', pattern: /^.{1,64}$/, accepted: 'a key label, 1 to 64 characters' },
    default: 'tokenproxy-kek',
    description:
      'With `kek: pkcs11`: label of the KEK object in the token; created on first start when absent.',
  },
  {
    name: 'drain_timeout',
    kind: { type: 'duration' },
    default: '10s',
    description: 'On SIGTERM/SIGINT, how long in-flight requests may finish before the process exits.',
  },
  {
    name: 'workers',
    kind: { type: 'count_or_auto', max: 256 },
    default: 1,
    description:
      'Serving processes sharing both ports (`auto`: one per CPU). Above 1 a primary process supervises them; needs `redis` ([workers](docs/workers.md)).',
  },
  {
    name: 'log_level',
    kind: { type: 'enum', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    default: 'info',
    description: 'Minimum level of the JSON log lines on stdout.',
  },
  // ---- cluster: several processes as one service (docs/cluster.md) ----
  {
    name: 'redis',
    kind: { type: 'url', protocols: ['redis:', 'rediss:'] },
    description:
      'Redis URL (`redis://host:6379`, `rediss://…` for TLS). Set: limits are shared and revocations reach every process of the cluster. Required with `workers` above 1.',
    secret: true,
  },
  {
    name: 'redis_ca',
    kind: { type: 'path' },
    description:
      'PEM file of extra CAs trusted for a `rediss://` Redis (like `provider_ca`). Public CAs stay trusted.',
  },
  // ---- retention: how long history is kept (docs/operations.md) ----
  {
    name: 'log_retention',
    kind: {
      type: 'string',
      pattern: /^\s*(forever|[1-9][0-9]{0,6} ?(h|hours?|d|days?))\s*$/i,
      accepted: 'a whole number of hours or days such as 48h, 30d or 400 days, or forever',
    },
    default: '30d',
    description:
      'How long request-log records, anomalies and delivered or failed events are kept; older ones are deleted in small batches. `forever` keeps them.',
  },
  {
    name: 'rollup_retention',
    kind: {
      type: 'string',
      pattern: /^\s*(forever|[1-9][0-9]{0,6} ?(h|hours?|d|days?))\s*$/i,
      accepted: 'a whole number of hours or days such as 48h, 30d or 400 days, or forever',
    },
    default: '400d',
    description:
      'How long the per-hour usage rollups behind the dashboard Overview are kept. `forever` keeps them.',
  },
  // ---- limits: anomaly detection on authorized traffic (docs/limits.md) ----
  {
    name: 'anomaly_spike_factor',
    kind: { type: 'number', min: 1, max: 1000, integer: false },
    default: 10,
    description:
      "A token's requests in one minute (or distinct IPs in ten) must exceed this multiple of its own baseline to count as a spike.",
  },
  {
    name: 'anomaly_min_requests',
    kind: { type: 'number', min: 1, max: 1_000_000, integer: true },
    default: 100,
    description: 'Requests of one token within one minute below which no rate spike is reported.',
  },
  {
    name: 'anomaly_distinct_ips',
    kind: { type: 'number', min: 2, max: 10_000, integer: true },
    default: 20,
    description:
      'Distinct client IPs of one token within ten minutes below which no `many_ips` anomaly is reported.',
  },
  {
    name: 'anomaly_warmup',
    kind: { type: 'duration' },
    default: '1h',
    description:
      'How long a token is observed (per process) before anomalies are reported; countries seen meanwhile are learned.',
  },
  // ---- usage and budgets (docs/usage.md) ----
  {
    name: 'budget_default_reservation',
    kind: { type: 'number', min: 1, max: 10_000_000, integer: true },
    default: 4096,
    description:
      'Output tokens a budgeted request reserves when its body names no `max_tokens` (or `max_output_tokens`, `max_completion_tokens`, `maxOutputTokens`) in its first 16 KiB.',
  },
] as const satisfies readonly SettingSpec[];

export type SettingName = (typeof SETTINGS)[number]['name'];

/** `api_port` → `--api-port`. */
export function flagName(name: string): string {
  return `--${name.replaceAll('_', '-')}`;
}

/** `api_port` → `TOKENPROXY_API_PORT`. */
export function envName(name: string): string {
  return `TOKENPROXY_${name.toUpperCase()}`;
}
