import { compileIpMatcher, type IpMatcher } from '../rules/ip-match.js';
import { compileOriginMatcher, type OriginMatcher } from '../rules/origin-match.js';
import type { TokenRecord } from '../store/records.js';
import type { TokenWithKey } from '../store/store.js';

/** A token as the proxy checks it: the record, its key's ciphertext and its compiled rules. */
export interface TokenEntry {
  readonly token: TokenRecord;
  /** Vault envelope of the real key; null once the key is deleted. Decrypted per request, never cached. */
  readonly ciphertext: Buffer | null;
  /** `expires_at` in ms since the epoch; Infinity for none. Compared with the clock on every request. */
  readonly expiresAtMs: number;
  readonly origins: OriginMatcher;
  /** Null when `authorized_ips` is empty (any IP). */
  readonly ips: IpMatcher | null;
}

export type Lookup = (digest: string) => Promise<TokenWithKey | undefined>;

/** DESIGN §4: revocations reach other processes within 1 s, so nothing is trusted for longer. */
export const TOKEN_CACHE_TTL_MS = 1000;
const MAX_ENTRIES = 10_000;

interface Slot {
  readonly at: number;
  value: TokenEntry | null | Promise<TokenEntry | null>;
}

interface CompiledRules {
  readonly originsKey: string;
  readonly origins: OriginMatcher;
  readonly ipsKey: string;
  readonly ips: IpMatcher | null;
}

/**
 * Token lookups by digest, positive and negative, kept for at most TOKEN_CACHE_TTL_MS. Concurrent
 * requests for one digest share one store query. `clear()` (a revoke, key rotation or deletion, or
 * token creation in this process) makes the very next request read the store again: a query still in
 * flight from before the clear neither fills the cache nor serves requests arriving after it.
 *
 * Compiled origin/IP matchers outlive the 1 s entries (keyed by token id and checked against the
 * rules' text), so a busy token is compiled once, not once a second.
 */
export class TokenCache {
  readonly #lookup: Lookup;
  readonly #now: () => number;
  readonly #slots = new Map<string, Slot>();
  readonly #rules = new Map<string, CompiledRules>();
  #generation = 0;

  constructor(lookup: Lookup, now: () => number) {
    this.#lookup = lookup;
    this.#now = now;
  }

  /** The entry (or null for an unknown digest) synchronously when cached, else a promise. */
  get(digest: string): TokenEntry | null | Promise<TokenEntry | null> {
    const now = this.#now();
    const slot = this.#slots.get(digest);
    if (slot !== undefined && now - slot.at < TOKEN_CACHE_TTL_MS && now >= slot.at) return slot.value;
    if (slot !== undefined) this.#slots.delete(digest);
    const generation = this.#generation;
    const fresh: Slot = { at: now, value: null };
    const pending = this.#lookup(digest).then(
      (found) => {
        const entry = found === undefined ? null : this.#entry(found);
        if (generation === this.#generation && this.#slots.get(digest) === fresh) fresh.value = entry;
        return entry;
      },
      (err: unknown) => {
        // Errors are not cached: the next request asks the store again.
        if (this.#slots.get(digest) === fresh) this.#slots.delete(digest);
        throw err;
      },
    );
    fresh.value = pending;
    if (this.#slots.size >= MAX_ENTRIES) this.#evictOldest();
    this.#slots.set(digest, fresh);
    return pending;
  }

  clear(): void {
    this.#generation++;
    this.#slots.clear();
  }

  #entry(found: TokenWithKey): TokenEntry {
    const { token } = found;
    return {
      token,
      ciphertext: found.ciphertext,
      expiresAtMs: token.expiresAt === null ? Infinity : Date.parse(token.expiresAt),
      ...this.#compiled(token),
    };
  }

  #compiled(token: TokenRecord): { origins: OriginMatcher; ips: IpMatcher | null } {
    const originsKey = token.authorizedOrigins.join('\n');
    const ipsKey = token.authorizedIps.join('\n');
    const known = this.#rules.get(token.id);
    if (known !== undefined && known.originsKey === originsKey && known.ipsKey === ipsKey) return known;
    const compiled: CompiledRules = {
      originsKey,
      origins: compileOriginMatcher(token.authorizedOrigins),
      ipsKey,
      ips: token.authorizedIps.length === 0 ? null : compileIpMatcher(token.authorizedIps),
    };
    if (this.#rules.size >= MAX_ENTRIES) this.#rules.clear();
    this.#rules.set(token.id, compiled);
    return compiled;
  }

  #evictOldest(): void {
    const oldest = this.#slots.keys().next();
    if (oldest.done !== true) this.#slots.delete(oldest.value);
  }
}
