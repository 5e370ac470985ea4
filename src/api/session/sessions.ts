import { randomBytes } from 'node:crypto';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { secretDigest } from '../../ids/formats.js';
import { IP_BACKOFF_POLICY, IpBackoff } from '../../limits/ip-backoff.js';
import { MemoryCounters, type Counters } from '../../limits/counters.js';
import type { ApiKeyRecord, LiveApiKey } from '../../store/access-records.js';
import type { AccountRecord } from '../../store/records.js';
import type { Store } from '../../store/store.js';

/** DESIGN §12: a session ends after 12 h without use or 7 days after sign-in, whichever comes first. */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000;
export const SESSION_ABSOLUTE_MS = 7 * 24 * 60 * 60 * 1000;
/** Use is written back at most this often per session, not on every API call of a busy page. */
const TOUCH_EVERY_MS = 60 * 1000;

export interface SignedIn {
  readonly account: AccountRecord;
  /** The API key signed in with, for the audit log. */
  readonly key: ApiKeyRecord;
  /** The cookie value: returned once to be set, never stored (only its digest is). */
  readonly cookieValue: string;
  readonly expiresAt: Date;
}

/**
 * Server-side dashboard sessions on the store, so they survive restarts and work across processes.
 * Wrong API keys at sign-in are slowed down per IP like the proxy's unauthorized attempts
 * (IpBackoff: 1 s, doubling up to 1 h).
 */
export class DashboardSessions {
  readonly #store: Pick<Store, 'sessions' | 'accounts' | 'apiKeys'>;
  readonly #backoff: IpBackoff;

  /**
   * `counters` hold the sign-in backoff: the limits' own, so with `redis` every process of a cluster
   * sees the same strikes (a guesser cannot spread attempts over the members); in-memory without.
   */
  constructor(
    store: Pick<Store, 'sessions' | 'accounts' | 'apiKeys'>,
    counters: Counters = new MemoryCounters(),
  ) {
    this.#store = store;
    this.#backoff = new IpBackoff(counters, IP_BACKOFF_POLICY, 'signin');
  }

  /**
   * The live full-scope key a sign-in names, under the per-IP backoff. Apart from `open` so the
   * backoff and the lookup stay outside the transaction that writes the session.
   */
  async verify(apiKey: string, ip: string, now: Date): Promise<LiveApiKey> {
    const wait = await this.#backoff.check(ip, now.getTime());
    if (wait > 0) throw tooManyAttempts(wait);
    const found = await this.#store.apiKeys.findLive(secretDigest(apiKey));
    if (found === undefined) {
      const blocked = await this.#backoff.strike(ip, now.getTime());
      if (blocked > 0) throw tooManyAttempts(blocked);
      throw new TokenProxyError('invalid_api_key', 'The API key is not valid.', { param: 'api_key' });
    }
    // A session may change everything, so a read-only key must not be able to open one.
    if (found.key.scope !== 'full') {
      throw new TokenProxyError(
        'insufficient_scope',
        `The API key "${found.key.name}" is read-only; the dashboard needs a key with scope "full".`,
        { param: 'api_key' },
      );
    }
    return found;
  }

  /** Opens a session for a key `verify` accepted; `store` is the transaction it commits with. */
  async open(verified: LiveApiKey, now: Date, store: Pick<Store, 'sessions'>): Promise<SignedIn> {
    // Ended sessions are swept here rather than by a timer: sign-ins are rare, and a dead session
    // is refused by its expiry columns anyway, so the sweep only keeps the table small.
    await store.sessions.purgeExpired(now.toISOString());
    const cookieValue = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now.getTime() + SESSION_ABSOLUTE_MS);
    await store.sessions.create({
      digest: secretDigest(cookieValue),
      accountId: verified.account.id,
      apiKeyId: verified.key.id,
      createdAt: now.toISOString(),
      idleExpiresAt: new Date(now.getTime() + SESSION_IDLE_MS).toISOString(),
      expiresAt: expiresAt.toISOString(),
    });
    return { ...verified, cookieValue, expiresAt };
  }

  /** The account of a live session, keeping it alive; throws `session_expired` otherwise. */
  async authenticate(cookieValue: string, now: Date): Promise<AccountRecord> {
    const digest = secretDigest(cookieValue);
    const nowIso = now.toISOString();
    const session = await this.#store.sessions.findLive(digest, nowIso);
    const account = session && (await this.#store.accounts.get(session.accountId));
    if (session === undefined || account === undefined) {
      throw new TokenProxyError('session_expired', 'Your dashboard session has ended. Sign in again.');
    }
    if (now.getTime() - Date.parse(session.lastSeenAt) >= TOUCH_EVERY_MS) {
      await this.#store.sessions.touch(
        digest,
        nowIso,
        new Date(now.getTime() + SESSION_IDLE_MS).toISOString(),
      );
    }
    return account;
  }

  async signOut(cookieValue: string): Promise<void> {
    await this.#store.sessions.delete(secretDigest(cookieValue));
  }
}

function tooManyAttempts(seconds: number): TokenProxyError {
  return new TokenProxyError(
    'too_many_attempts',
    `Too many wrong API keys from your address. Try again in ${seconds} s.`,
    { headers: { 'retry-after': String(seconds) } },
  );
}
