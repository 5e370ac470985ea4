import type { Budget } from '../usage/budget.js';
import type { TokenEventBuilder } from './event-records.js';
import type { Page, PageQuery, ProviderKeyRecord, RateLimit, TokenRecord, TokenStatus } from './records.js';

/** Store types of an account's provider keys and the sanitized tokens handed out for them. */

export interface NewProviderKey {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly provider: string;
  readonly hint: string;
  readonly ciphertext: Buffer;
  readonly createdAt: string;
}

export interface KeyRotation {
  readonly ciphertext: Buffer;
  readonly hint: string;
  readonly rotatedAt: string;
}

export interface KeyDeletion {
  readonly key: ProviderKeyRecord;
  /** Tokens this deletion revoked (empty on a repeated delete). */
  readonly revokedTokens: readonly TokenRecord[];
}

export interface KeyRepo {
  create(key: NewProviderKey): Promise<ProviderKeyRecord>;
  /**
   * `tokenCount` counts tokens with stored status active; given `now`, also only those not past
   * `expires_at` at `now` (what the API shows). rotate and delete count at their own timestamp.
   */
  get(accountId: string, keyId: string, now?: string): Promise<ProviderKeyRecord | undefined>;
  list(accountId: string, page: PageQuery, now?: string): Promise<Page<ProviderKeyRecord>>;
  /** Replaces the ciphertext. Throws StoreConflictError('key_deleted') on a deleted key. */
  rotate(accountId: string, keyId: string, rotation: KeyRotation): Promise<ProviderKeyRecord | undefined>;
  /**
   * Destroys the ciphertext and revokes every active token using the key, in one transaction.
   * Idempotent: deleting a deleted key returns it unchanged with no revoked tokens. With `emit`, one
   * event per revoked token is committed to the outbox in the same transaction.
   */
  delete(
    accountId: string,
    keyId: string,
    at: string,
    emit?: TokenEventBuilder,
  ): Promise<KeyDeletion | undefined>;
}

export interface NewToken {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly provider: string;
  readonly digest: string;
  readonly hint: string;
  readonly authorizedOrigins: readonly string[];
  readonly authorizedIps: readonly string[];
  readonly rateLimit: RateLimit | null;
  readonly budget?: Budget | null | undefined;
  readonly expiresAt: string | null;
  readonly createdAt: string;
}

export interface TokenCreation {
  readonly token: NewToken;
  /** Either an existing key of the same account and provider, or a new key created with the token. */
  readonly key: { readonly existingKeyId: string } | { readonly newKey: NewProviderKey };
  /** Plan cap on active tokens; null for no cap. Checked inside the same transaction. */
  readonly maxActiveTokens: number | null;
}

/** PATCH /v1/tokens/:id: only the fields present change; null clears rate limit or expiry. */
export interface TokenPatch {
  readonly name?: string | undefined;
  readonly authorizedOrigins?: readonly string[] | undefined;
  readonly authorizedIps?: readonly string[] | undefined;
  readonly rateLimit?: RateLimit | null | undefined;
  readonly expiresAt?: string | null | undefined;
  readonly budget?: Budget | null | undefined;
}

export interface TokenRevocation {
  readonly token: TokenRecord;
  /** False when the token was already revoked (no event should follow). */
  readonly changed: boolean;
}

/** A token together with its key's ciphertext: everything the proxy needs from the store. */
export interface TokenWithKey {
  readonly token: TokenRecord;
  readonly ciphertext: Buffer | null;
}

export interface TokenRepo {
  /**
   * Creates the token (and its key, for `newKey`) atomically. Throws StorePlanLimitError when the
   * account already has `maxActiveTokens` active tokens, StoreNotFoundError('key') for an unknown
   * key, StoreConflictError('key_deleted') for a deleted key and StoreConflictError('provider_mismatch')
   * when the key belongs to another provider.
   */
  create(creation: TokenCreation): Promise<TokenRecord>;
  get(accountId: string, tokenId: string): Promise<TokenRecord | undefined>;
  list(
    accountId: string,
    filter: { status?: TokenStatus | undefined; now: string },
    page: PageQuery,
  ): Promise<Page<TokenRecord>>;
  /**
   * With `emit`, the event it builds from the revoked token is committed in the same transaction as
   * the status change, and only when the status changed (a repeated revoke emits nothing).
   */
  revoke(
    accountId: string,
    tokenId: string,
    at: string,
    emit?: TokenEventBuilder,
  ): Promise<TokenRevocation | undefined>;
  /**
   * Marks up to `limit` active tokens whose `expires_at` is at or before `now` as `expired` and
   * commits the event `emit` builds for each, in one transaction. Tokens another process is
   * expiring at the same moment are skipped, so every token is expired (and announced) once.
   */
  expireDue(now: string, limit: number, emit: TokenEventBuilder): Promise<readonly TokenRecord[]>;
  /**
   * Whether any active token is past `expires_at` at `now`: a plain read, so a sweep with nothing to
   * do takes no write lock (on SQLite, one the proxy's thread would wait for while another
   * connection writes).
   */
  anyDue(now: string): Promise<boolean>;
  /**
   * Changes the given fields of the account's token; undefined when there is no such token. A change
   * of `expiresAt` applies only to a token active at `at` (not revoked, not past its expiry) and
   * throws StoreConflictError('token_not_active') otherwise: an ended token is not brought back, and
   * the change and the expiry sweep cannot both win.
   */
  update(accountId: string, tokenId: string, patch: TokenPatch, at: string): Promise<TokenRecord | undefined>;
  /**
   * The kill switch: revokes every active (not revoked, not past expiry at `at`) token of the account
   * and commits the event `emit` builds for each, in one transaction. Returns the revoked tokens.
   */
  revokeAll(accountId: string, at: string, emit?: TokenEventBuilder): Promise<readonly TokenRecord[]>;
  /** The account's tokens that have a budget (GET /v1/usage's spend against budgets). */
  withBudgets(accountId: string): Promise<readonly TokenRecord[]>;
  /** Lookup for the proxy by digest of the sanitized token; any status. */
  findByDigest(digest: string): Promise<TokenWithKey | undefined>;
  /**
   * Counts forwarded requests, in one transaction: each entry adds `count` to the token's
   * `request_count`, moves `last_used_at` forward to `lastUsedAt` (never back), and adds `count` to
   * the account's usage for the month (UTC) of `lastUsedAt`. Entries for unknown tokens change no
   * token, but still count as usage of their account.
   */
  recordUsage(batch: readonly TokenUsage[]): Promise<void>;
}

export interface TokenUsage {
  readonly tokenId: string;
  readonly accountId: string;
  readonly count: number;
  readonly lastUsedAt: string;
}
