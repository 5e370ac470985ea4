import type {
  AccountRecord,
  AnomalyEntry,
  Page,
  PageQuery,
  PlanName,
  ProviderKeyRecord,
  RateLimit,
  RequestLogEntry,
  TokenRecord,
  TokenStatus,
} from './records.js';

/**
 * The data layer: one interface, implemented once on Kysely for SQLite and PostgreSQL
 * (`src/store/dialects/*`). Every method scoped to an account takes the account id, so a record of
 * another account is simply not found. Callers pass timestamps in, which keeps time testable.
 */
export interface Store {
  readonly dialect: 'sqlite' | 'postgres';
  readonly accounts: AccountRepo;
  readonly keys: KeyRepo;
  readonly tokens: TokenRepo;
  readonly requestLogs: RequestLogRepo;
  readonly anomalies: AnomalyRepo;
  /** Resolves when the database answers a trivial query; rejects with StoreUnavailableError. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface NewAccount {
  readonly id: string;
  readonly name: string;
  readonly plan: PlanName;
  readonly createdAt: string;
  /** The account's first API key, as digest plus visible start. */
  readonly apiKeyDigest: string;
  readonly apiKeyStart: string;
}

export interface AccountPatch {
  readonly name?: string;
  readonly alertEmail?: string | null;
}

export interface AccountRepo {
  create(account: NewAccount): Promise<AccountRecord>;
  count(): Promise<number>;
  get(accountId: string): Promise<AccountRecord | undefined>;
  /** The account owning a live API key with this digest. */
  findByApiKeyDigest(digest: string): Promise<AccountRecord | undefined>;
  update(accountId: string, patch: AccountPatch): Promise<AccountRecord | undefined>;
  /** Active (not revoked, not past expiry at `now`) tokens of the account. */
  countActiveTokens(accountId: string, now: string): Promise<number>;
  /** Proxied requests counted for the account in `period` (`YYYY-MM`, UTC). */
  usage(accountId: string, period: string): Promise<number>;
}

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
   * Idempotent: deleting a deleted key returns it unchanged with no revoked tokens.
   */
  delete(accountId: string, keyId: string, at: string): Promise<KeyDeletion | undefined>;
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
  revoke(accountId: string, tokenId: string, at: string): Promise<TokenRevocation | undefined>;
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

export interface RequestLogFilter {
  readonly tokenId?: string | undefined;
  readonly authorized?: boolean | undefined;
}

export interface RequestLogRepo {
  /** Idempotent per id, so a batch retried after an unclear failure is not stored twice. */
  insertMany(entries: readonly RequestLogEntry[]): Promise<void>;
  /** The account's records, newest first; `page.after.createdAt` is a record's `timestamp`. */
  list(accountId: string, filter: RequestLogFilter, page: PageQuery): Promise<Page<RequestLogEntry>>;
}

export interface AnomalyRepo {
  /** Idempotent per id, like request logs. */
  insertMany(entries: readonly AnomalyEntry[]): Promise<void>;
  /** The account's anomalies, newest first; `page.after.createdAt` is an entry's `timestamp`. */
  list(
    accountId: string,
    filter: { readonly tokenId?: string | undefined },
    page: PageQuery,
  ): Promise<Page<AnomalyEntry>>;
}
