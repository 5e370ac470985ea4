import { parseWindow } from '../rules/duration.js';
import type { RateLimit, TokenRecord } from '../store/records.js';
import type { Counters, MaybePromise, WindowCount } from './counters.js';
import { retryAfterSeconds } from './ip-backoff.js';

/** A token's `rate_limit`, parsed once and kept while the token's record says the same. */
interface RateSpec {
  readonly source: RateLimit;
  readonly key: string;
  readonly requests: number;
  readonly windowMs: number;
  readonly limitText: string;
}

export interface RateVerdict {
  readonly allowed: boolean;
  /** `RateLimit-Limit/Remaining/Reset` (and `Retry-After` when refused), as name/value pairs. */
  readonly headers: readonly string[];
}

const MAX_SPECS = 50_000;

/**
 * Per-token fixed-window rate limits (`rate_limit {requests, window}`). A window opens with the
 * first request after the previous one ended and lasts `window`; the count is incremented and read in
 * one atomic step, so `requests` is exact however many requests arrive at once. Refused requests
 * count too (they were made), which changes nothing: the window is already used up. An edit of the
 * limit keeps the window under way and its count.
 */
export class TokenRateLimits {
  readonly #counters: Counters;
  readonly #specs = new Map<string, RateSpec | null>();

  constructor(counters: Counters) {
    this.#counters = counters;
  }

  /** Null when the token has no rate limit (or an unparsable one, which the API never stores). */
  check(token: TokenRecord, now: number): MaybePromise<RateVerdict> | null {
    const spec = this.#spec(token);
    if (spec === null) return null;
    const hit = this.#counters.hit(spec.key, spec.windowMs, now);
    return hit instanceof Promise ? hit.then((h) => verdict(spec, h, now)) : verdict(spec, hit, now);
  }

  #spec(token: TokenRecord): RateSpec | null {
    const rate = token.rateLimit;
    const known = this.#specs.get(token.id);
    // The token record is re-read every second; an unchanged rate_limit object keeps its parse.
    if (known !== undefined && (known === null ? rate === null : known.source === rate)) return known;
    if (known !== undefined && known !== null && rate !== null && sameRate(known.source, rate)) return known;
    let spec: RateSpec | null = null;
    if (rate !== null) {
      const parsed = parseWindow(rate.window);
      if (parsed.ok && rate.requests > 0) {
        spec = {
          source: rate,
          // The token's one counter, whatever its limit says: an edited `requests` is compared with
          // the count so far (tightened during abuse, it holds at once; keyed by the limit, an edit
          // opened a fresh allowance), and an edited window applies from the next window on.
          key: `rl:${token.id}`,
          requests: rate.requests,
          windowMs: parsed.ms,
          limitText: String(rate.requests),
        };
      }
    }
    if (this.#specs.size >= MAX_SPECS) this.#specs.clear();
    this.#specs.set(token.id, spec);
    return spec;
  }
}

function sameRate(a: RateLimit, b: RateLimit): boolean {
  return a.requests === b.requests && a.window === b.window;
}

function verdict(spec: RateSpec, hit: WindowCount, now: number): RateVerdict {
  const count = hit.count;
  const reset = String(Math.max(1, retryAfterSeconds(hit.resetAt - now)));
  const allowed = count <= spec.requests;
  const remaining = allowed ? String(spec.requests - count) : '0';
  const headers = [
    'RateLimit-Limit',
    spec.limitText,
    'RateLimit-Remaining',
    remaining,
    'RateLimit-Reset',
    reset,
  ];
  if (!allowed) headers.push('Retry-After', reset);
  return { allowed, headers };
}
