import { randomBytes } from 'node:crypto';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { secretDigest } from '../../ids/formats.js';
import { IpBackoff } from '../../limits/ip-backoff.js';
import { MemoryCounters } from '../../limits/counters.js';
import type { ApiKeyRecord } from '../../store/access-records.js';
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

  constructor(store: Pick<Store, 'sessions' | 'accounts' | 'apiKeys'>, backoff?: IpBackoff) {
    this.#store = store;
    this.#backoff = backoff ?? new IpBackoff(new MemoryCounters());
  }

  async signIn(apiKey: string, ip: string, now: Date): Promise<SignedIn> {
    const wait = await this.#backoff.check(ip, now.getTime());
    if (wait > 0) throw tooManyAttempts(wait);
    const found = await this.#store.apiKeys.findLive(secretDigest(apiKey));
    if (found === undefined) {
      const blocked = await this.#backoff.strike(ip, now.getTime());
      if (blocked > 0) throw tooManyAttempts(blocked);
      throw new TokenProxyError('invalid_api_key', 'The API key is not valid.', { param: 'api_key' });
    }
    const { account, key } = found;
    // A session may change everything, so a read-only key must not be able to open one.
    if (key.scope !== 'full') {
      throw new TokenProxyError(
        'insufficient_scope',
        `The API key "${key.name}" is read-only; the dashboard needs a key with scope "full".`,
        { param: 'api_key' },
      );
    }
    // Ended sessions are swept here rather than by a timer: sign-ins are rare, and a dead session
    // is refused by its expiry columns anyway, so the sweep only keeps the table small.
    await this.#store.sessions.purgeExpired(now.toISOString());
    const cookieValue = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now.getTime() + SESSION_ABSOLUTE_MS);
    await this.#store.sessions.create({
      digest: secretDigest(cookieValue),
      accountId: account.id,
      createdAt: now.toISOString(),
      idleExpiresAt: new Date(now.getTime() + SESSION_IDLE_MS).toISOString(),
      expiresAt: expiresAt.toISOString(),
    });
    return { account, key, cookieValue, expiresAt };
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
