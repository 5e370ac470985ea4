/**
 * Anomalies in authorized traffic (specification §6, DESIGN §6 `anomaly.detected`), judged against
 * each token's own history. Pure and in memory: no clock, no I/O; the caller passes `now` and acts on
 * what `observe` reports.
 *
 * - `rate_spike`: requests in the current minute ≥ `minRequests` and ≥ `spikeFactor` × the token's
 *   baseline, an exponentially weighted mean of its past per-minute counts (idle minutes count as 0).
 * - `new_country`: a country the token was not used from before (countries seen during the warm-up
 *   are learned silently).
 * - `many_ips`: distinct client IPs within one `ipWindowMs` window ≥ `distinctIps` and ≥ `spikeFactor`
 *   × the token's baseline of distinct IPs per window (a public web app has many users; a sudden
 *   jump is what matters).
 *
 * Nothing is reported during a token's warm-up (from its first request seen by this process), and
 * each kind is reported at most once per `cooldownMs` per token.
 */

export const ANOMALY_KINDS = ['rate_spike', 'new_country', 'many_ips'] as const;
export type AnomalyKind = (typeof ANOMALY_KINDS)[number];

export interface AnomalySettings {
  readonly spikeFactor: number;
  readonly minRequests: number;
  readonly distinctIps: number;
  readonly warmupMs: number;
  readonly ipWindowMs: number;
  readonly cooldownMs: number;
}

export const DEFAULT_ANOMALY_SETTINGS: AnomalySettings = Object.freeze({
  spikeFactor: 10,
  minRequests: 100,
  distinctIps: 20,
  warmupMs: 60 * 60_000,
  ipWindowMs: 10 * 60_000,
  cooldownMs: 10 * 60_000,
});

const MINUTE_MS = 60_000;
/** Per-minute weight of the rate baseline: a mean over roughly the last half hour. */
const RATE_ALPHA = 1 / 30;
/** Per-window weight of the distinct-IP baseline: roughly the last six windows (an hour). */
const IP_ALPHA = 1 / 6;
/** A token used from more countries than this is global: new countries stop being news. */
const MAX_COUNTRIES = 64;
/** Distinct IPs remembered per token and window, whatever the threshold. */
const MAX_IPS = 10_000;

export interface Detection {
  readonly kind: AnomalyKind;
  readonly details: Readonly<Record<string, unknown>>;
}

export interface TokenUsage {
  readonly firstSeen: number;
  lastSeen: number;
  minute: number;
  count: number;
  baseline: number;
  spikeReported: boolean;
  countries: Set<string>;
  ipWindow: number;
  ips: Set<string>;
  ipBaseline: number;
  ipCap: number;
  ipReported: boolean;
  alerted: Record<AnomalyKind, number>;
}

export function newUsage(now: number): TokenUsage {
  return {
    firstSeen: now,
    lastSeen: now,
    minute: Math.floor(now / MINUTE_MS),
    count: 0,
    baseline: 0,
    spikeReported: false,
    countries: new Set(),
    ipWindow: -1,
    ips: new Set(),
    ipBaseline: 0,
    ipCap: 0,
    ipReported: false,
    alerted: { rate_spike: -Infinity, new_country: -Infinity, many_ips: -Infinity },
  };
}

/**
 * Counts one authorized request of a token and returns what it makes anomalous (usually nothing:
 * then no array is allocated). `country` null means unknown and is ignored.
 */
export function observeUsage(
  u: TokenUsage,
  now: number,
  ip: string,
  country: string | null,
  s: AnomalySettings,
): Detection[] | null {
  let found: Detection[] | null = null;
  const warm = now - u.firstSeen >= s.warmupMs;
  u.lastSeen = now;

  const minute = Math.floor(now / MINUTE_MS);
  if (minute > u.minute) {
    const gap = minute - u.minute;
    u.baseline = u.baseline * (1 - RATE_ALPHA) + u.count * RATE_ALPHA;
    if (gap > 1) u.baseline *= (1 - RATE_ALPHA) ** Math.min(gap - 1, 10_000);
    u.minute = minute;
    u.count = 0;
    u.spikeReported = false;
  }
  u.count++;
  if (
    warm &&
    !u.spikeReported &&
    u.count >= s.minRequests &&
    u.count >= s.spikeFactor * u.baseline &&
    now - u.alerted.rate_spike >= s.cooldownMs
  ) {
    u.spikeReported = true;
    u.alerted.rate_spike = now;
    found = [
      {
        kind: 'rate_spike',
        details: {
          requests_this_minute: u.count,
          baseline_per_minute: Math.round(u.baseline * 100) / 100,
          factor: s.spikeFactor,
        },
      },
    ];
  }

  if (country !== null && !u.countries.has(country) && u.countries.size < MAX_COUNTRIES) {
    const known = warm ? [...u.countries] : null;
    u.countries.add(country);
    if (known !== null && known.length > 0 && now - u.alerted.new_country >= s.cooldownMs) {
      u.alerted.new_country = now;
      (found ??= []).push({ kind: 'new_country', details: { country, known_countries: known.sort() } });
    }
  }

  const ipWindow = Math.floor(now / s.ipWindowMs);
  if (ipWindow !== u.ipWindow) {
    if (u.ipWindow >= 0) {
      const gap = ipWindow - u.ipWindow;
      u.ipBaseline = u.ipBaseline * (1 - IP_ALPHA) + u.ips.size * IP_ALPHA;
      if (gap > 1) u.ipBaseline *= (1 - IP_ALPHA) ** Math.min(gap - 1, 10_000);
    }
    u.ipWindow = ipWindow;
    u.ips.clear();
    u.ipReported = false;
    u.ipCap = Math.min(MAX_IPS, Math.max(s.distinctIps, Math.ceil(s.spikeFactor * u.ipBaseline)));
  }
  if (!u.ipReported && u.ips.size < u.ipCap && !u.ips.has(ip)) {
    u.ips.add(ip);
    if (
      warm &&
      u.ips.size >= u.ipCap &&
      u.ips.size >= s.distinctIps &&
      now - u.alerted.many_ips >= s.cooldownMs
    ) {
      u.ipReported = true;
      u.alerted.many_ips = now;
      (found ??= []).push({
        kind: 'many_ips',
        details: {
          distinct_ips: u.ips.size,
          window_seconds: s.ipWindowMs / 1000,
          baseline_per_window: Math.round(u.ipBaseline * 100) / 100,
        },
      });
    }
  }
  return found;
}

const MAX_TOKENS = 50_000;
/** A token idle this long loses its history (memory bound; it warms up again when it returns). */
export const USAGE_IDLE_MS = 24 * 60 * 60_000;

/** The per-token histories, bounded in number and swept of idle tokens. */
export class AnomalyModel {
  readonly settings: AnomalySettings;
  readonly #tokens = new Map<string, TokenUsage>();

  constructor(settings: AnomalySettings = DEFAULT_ANOMALY_SETTINGS) {
    this.settings = settings;
  }

  observe(tokenId: string, now: number, ip: string, country: string | null): Detection[] | null {
    let u = this.#tokens.get(tokenId);
    if (u === undefined) {
      if (this.#tokens.size >= MAX_TOKENS) {
        const oldest = this.#tokens.keys().next();
        if (oldest.done !== true) this.#tokens.delete(oldest.value);
      }
      u = newUsage(now);
      this.#tokens.set(tokenId, u);
    }
    return observeUsage(u, now, ip, country, this.settings);
  }

  sweep(now: number): void {
    for (const [id, u] of this.#tokens) if (now - u.lastSeen >= USAGE_IDLE_MS) this.#tokens.delete(id);
  }

  get size(): number {
    return this.#tokens.size;
  }
}
