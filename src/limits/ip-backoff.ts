import type { BackoffPolicy, Counters, MaybePromise, Strike } from './counters.js';
import { ipNetworkKey } from './ip-network.js';

/**
 * DESIGN §6 and §10: after a refused 401/403, an IP waits 1 s; every further refused attempt from it
 * doubles the wait (restarting it) up to 1 h; an hour without attempts forgets the IP. An IPv6 client
 * is judged by its /64 (ipNetworkKey), so hopping addresses inside it does not start it fresh.
 */
export const IP_BACKOFF_POLICY: BackoffPolicy = Object.freeze({
  baseMs: 1000,
  maxMs: 60 * 60 * 1000,
  resetAfterMs: 60 * 60 * 1000,
});

/** `Retry-After` is whole seconds; rounding up never invites a retry that is still refused. */
export function retryAfterSeconds(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

export class IpBackoff {
  readonly #counters: Counters;
  readonly #policy: BackoffPolicy;
  readonly #prefix: string;

  /**
   * `scope` keeps separate backoffs apart in one set of counters: the proxy's (`ip`) and the
   * dashboard sign-in's (`signin`), so wrong sign-ins never block an address's proxied requests.
   */
  constructor(counters: Counters, policy: BackoffPolicy = IP_BACKOFF_POLICY, scope = 'ip') {
    this.#counters = counters;
    this.#policy = policy;
    this.#prefix = `${scope}:`;
  }

  /** Seconds this IP must still wait (0 = not in backoff). Records nothing. */
  check(ip: string, now: number): MaybePromise<number> {
    const ms = this.#counters.waiting(this.#prefix + ipNetworkKey(ip), now, this.#policy);
    return ms instanceof Promise ? ms.then(retryAfterSeconds) : retryAfterSeconds(ms);
  }

  /**
   * Records a refused attempt from `ip`. Returns 0 when the IP was not in backoff (answer the
   * 401/403 as usual), else the seconds of the new, doubled wait (answer 429 `ip_backoff`).
   */
  strike(ip: string, now: number): MaybePromise<number> {
    const strike = this.#counters.strike(this.#prefix + ipNetworkKey(ip), now, this.#policy);
    return strike instanceof Promise ? strike.then(strikeAnswer) : strikeAnswer(strike);
  }
}

function strikeAnswer(strike: Strike): number {
  return strike.blocked ? Math.max(1, retryAfterSeconds(strike.waitMs)) : 0;
}
