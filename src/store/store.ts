import type { Budget } from '../usage/budget.js';
import type {
  AccountRecord,
  AnomalyEntry,
  ClaimedDelivery,
  DeliveryChannel,
  EventRecord,
  WebhookRecord,
  Page,
  PageQuery,
  PlanName,
  ProviderKeyRecord,
  RateLimit,
  RequestLogEntry,
  TokenRecord,
  TokenStatus,
} from './records.js';
import type {
  DeliveryRecord,
  SessionRepo,
  UsageModelRollupRepo,
  UsageRollupRepo,
} from './dashboard-records.js';
import type { ApiKeyRepo, AuditRepo } from './access-records.js';
import type { RetentionRepo } from './retention-records.js';
import type { AttemptErrorClass, WebhookToolRepo } from './webhook-tool-records.js';

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
  readonly idempotency: IdempotencyRepo;
  readonly webhooks: WebhookRepo;
  readonly events: EventRepo;
  readonly deliveries: DeliveryRepo;
  readonly keks: KekRepo;
  readonly sessions: SessionRepo;
  readonly usageRollups: UsageRollupRepo;
  readonly jobLeases: JobLeaseRepo;
  readonly usageModelRollups: UsageModelRollupRepo;
  readonly apiKeys: ApiKeyRepo;
  readonly audit: AuditRepo;
  readonly retention: RetentionRepo;
  readonly webhookTools: WebhookToolRepo;
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
  /** Id of that first key (named `default`, full scope); one is drawn when omitted. */
  readonly apiKeyId?: string | undefined;
}

export interface AccountPatch {
  readonly name?: string;
  readonly alertEmail?: string | null;
  readonly budget?: Budget | null;
}

export interface AccountRepo {
  create(account: NewAccount): Promise<AccountRecord>;
  count(): Promise<number>;
  get(accountId: string): Promise<AccountRecord | undefined>;
  /** The account owning a live API key with this digest. */
  findByApiKeyDigest(digest: string): Promise<AccountRecord | undefined>;
  update(accountId: string, patch: AccountPatch): Promise<AccountRecord | undefined>;
  /** Every account, oldest first (the operator's `tokenproxy accounts list`). */
  listAll(): Promise<readonly AccountRecord[]>;
  /** Moves the account to `plan`; undefined when there is no such account. */
  setPlan(accountId: string, plan: PlanName): Promise<AccountRecord | undefined>;
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
  /** Changes the given fields of the account's token; undefined when there is no such token. */
  update(accountId: string, tokenId: string, patch: TokenPatch): Promise<TokenRecord | undefined>;
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

export interface RequestLogFilter {
  readonly tokenId?: string | undefined;
  readonly authorized?: boolean | undefined;
  /** Inclusive range of HTTP statuses (one status: both ends equal). */
  readonly status?: readonly [number, number] | undefined;
  /** Inclusive lower and exclusive upper bound on `timestamp` (ISO text). */
  readonly since?: string | undefined;
  readonly until?: string | undefined;
  readonly errorCode?: string | undefined;
  readonly ip?: string | undefined;
}

export interface RequestLogRepo {
  /** Idempotent per id, so a batch retried after an unclear failure is not stored twice. */
  insertMany(entries: readonly RequestLogEntry[]): Promise<void>;
  /** The account's records, newest first; `page.after.createdAt` is a record's `timestamp`. */
  list(accountId: string, filter: RequestLogFilter, page: PageQuery): Promise<Page<RequestLogEntry>>;
  /** One of the account's records by request id (`x-tokenproxy-request-id`). */
  get(accountId: string, requestId: string): Promise<RequestLogEntry | undefined>;
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

export interface IdempotencyStart {
  readonly accountId: string;
  readonly key: string;
  /** Digest of what the request asks for (method, path, body): a reused key must ask the same. */
  readonly fingerprint: string;
  readonly now: string;
  readonly expiresAt: string;
  /** An unfinished first request started before this is taken to have died with its process. */
  readonly staleBefore: string;
}

export type IdempotencyBegin =
  | { readonly state: 'started' }
  | { readonly state: 'in_flight' }
  | { readonly state: 'mismatch' }
  | { readonly state: 'completed'; readonly status: number; readonly body: Buffer };

/** Idempotency keys of the management API's POST routes (24 h per account and key). */
export interface IdempotencyRepo {
  /** Claims the key atomically, or reports what holds it. Expired and stale claims are replaced. */
  begin(start: IdempotencyStart): Promise<IdempotencyBegin>;
  /** Records the first response (`body` is the sealed envelope the caller made). */
  complete(accountId: string, key: string, status: number, body: Buffer): Promise<void>;
  /** Drops an unfinished claim, so a retry does the work again (after a 5xx, say). */
  release(accountId: string, key: string): Promise<void>;
  /** Deletes every key past its expiry; returns how many. */
  purgeExpired(now: string): Promise<number>;
}

/** An event ready for the outbox; `data` is the JSON object receivers will see. */
export interface OutboxEvent {
  readonly id: string;
  readonly accountId: string;
  readonly type: string;
  readonly createdAt: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** Builds the event of a token status change, from the token as stored after the change. */
export type TokenEventBuilder = (token: TokenRecord) => OutboxEvent;

export interface FanOutOptions {
  /** Event types that also get an e-mail to the account's `alert_email` (when it has one). */
  readonly emailTypes: readonly string[];
}

export interface EventRepo {
  /**
   * Commits the events and, in the same transaction, one pending delivery per enabled webhook of the
   * account that subscribes to the type (and an e-mail delivery for `emailTypes`).
   */
  append(events: readonly OutboxEvent[], options: FanOutOptions): Promise<void>;
  /** The account's events, newest first. */
  list(
    accountId: string,
    filter: { readonly type?: string | undefined },
    page: PageQuery,
  ): Promise<Page<EventRecord>>;
}

export interface NewWebhook {
  readonly id: string;
  readonly accountId: string;
  readonly url: string;
  readonly events: readonly string[];
  /** Vault envelope of the signing secret. */
  readonly secret: Buffer;
  readonly createdAt: string;
}

export interface WebhookRepo {
  create(webhook: NewWebhook): Promise<WebhookRecord>;
  get(accountId: string, webhookId: string): Promise<WebhookRecord | undefined>;
  list(accountId: string, page: PageQuery): Promise<Page<WebhookRecord>>;
  /** Removes the endpoint and its pending deliveries; undefined when there is no such endpoint. */
  delete(accountId: string, webhookId: string): Promise<WebhookRecord | undefined>;
}

/** What happened to one delivery attempt. */
export type DeliveryOutcome = (
  | { readonly kind: 'delivered'; readonly at: string }
  | { readonly kind: 'retry'; readonly at: string; readonly nextAttemptAt: string; readonly error: string }
  /** No attempt left, or nothing to deliver to any more (endpoint deleted or disabled). */
  | { readonly kind: 'failed'; readonly at: string; readonly error: string }
) & {
  /** The request made, recorded as an attempt of a webhook delivery (none when nothing was sent). */
  readonly attempt?: AttemptFacts | undefined;
};

export interface AttemptFacts {
  readonly startedAt: string;
  readonly statusCode: number | null;
  readonly durationMs: number;
  readonly errorClass: AttemptErrorClass | null;
}

export interface DisablePolicy {
  /** An endpoint failing since at or before this instant is disabled. */
  readonly failingSinceAtOrBefore: string;
  readonly reason: string;
}

/**
 * Which due deliveries a claim may take, so the worker can keep lanes (e-mail, breach alerts) and
 * share its slots fairly between accounts and endpoints. Omitted fields do not restrict.
 */
export interface ClaimFilter {
  readonly channel?: DeliveryChannel | undefined;
  /** Only deliveries of events of these types. */
  readonly eventTypes?: readonly string[] | undefined;
  /** Endpoints already at their in-flight cap. */
  readonly skipWebhooks?: readonly string[] | undefined;
  /** Accounts already at their in-flight cap. */
  readonly skipAccounts?: readonly string[] | undefined;
  /**
   * At most this many per account in one claim, taken round-robin: every account's oldest due
   * delivery before any account's second, so one account's backlog never hides another's.
   */
  readonly perAccount?: number | undefined;
  /** At most this many per webhook endpoint in one claim. */
  readonly perWebhook?: number | undefined;
}

export interface DeliveryRepo {
  /**
   * Claims up to `limit` pending deliveries due at `now` whose lease is free and that `filter`
   * admits, leasing them until `leaseUntil`; the oldest first, in round-robin order across accounts.
   * Two processes never claim the same delivery while its lease runs.
   */
  claim(
    now: string,
    leaseUntil: string,
    limit: number,
    filter?: ClaimFilter,
  ): Promise<readonly ClaimedDelivery[]>;
  /**
   * Records an attempt's outcome and releases the lease. For a webhook delivery it also keeps the
   * endpoint's `failing_since`, and disables the endpoint (failing its pending deliveries) per
   * `disable`. Returns true when this call disabled the endpoint.
   */
  complete(delivery: ClaimedDelivery, outcome: DeliveryOutcome, disable?: DisablePolicy): Promise<boolean>;
  /** Pending deliveries (any lease), for shutdown reports and tests. */
  countPending(): Promise<number>;
  /** The deliveries to one of the account's webhook endpoints, newest first. */
  listForWebhook(accountId: string, webhookId: string, page: PageQuery): Promise<Page<DeliveryRecord>>;
}

/** A KEK version as the store records it (DESIGN §8); nothing in it is secret. */
export interface KekVersion {
  /** The KEK's fingerprint as hex: the id every envelope sealed under it carries. */
  readonly id: string;
  readonly provider: string;
  readonly label: string | null;
  /** A vault envelope of a known plaintext sealed under this KEK. */
  readonly canary: Buffer;
  /**
   * The MAC keys inherited from the version this one replaced, as a vault envelope under this
   * version; null for a store's first version (its MAC keys derive from its KEK).
   */
  readonly macKeys: Buffer | null;
  readonly createdAt: string;
  readonly retiredAt: string | null;
}

export type NewKekVersion = Omit<KekVersion, 'retiredAt' | 'macKeys'> & { readonly macKeys?: Buffer | null };

/** One stored envelope with what the vault binds it to. */
export interface EnvelopeRef {
  readonly table: 'provider_keys' | 'webhooks' | 'idempotency_keys';
  /** The vault binding's keyId (the row's id, or `idempotency:<key>`). */
  readonly keyId: string;
  readonly accountId: string;
  readonly envelope: Buffer;
}

export interface KekRepo {
  /** Every recorded KEK version, oldest first, retired ones included. */
  list(): Promise<readonly KekVersion[]>;
  /**
   * Records a version; false when it was already recorded, or (with `onlyIfNone`) when any version
   * is. `onlyIfNone` is atomic across processes: of two first starts, one registers its KEK.
   */
  add(version: NewKekVersion, options?: { onlyIfNone?: boolean }): Promise<boolean>;
  /** Marks a version retired (no envelope uses it any more). */
  retire(id: string, at: string): Promise<void>;
  /** How many live envelopes each KEK id wraps, over every table holding envelopes. */
  envelopeCounts(): Promise<ReadonlyMap<string, number>>;
  /** A live provider-key or webhook envelope sealed under `kekId`, to test a KEK against. */
  sampleEnvelope(kekId: string): Promise<EnvelopeRef | undefined>;
  /** Up to `limit` live envelopes of any table sealed under `kekId` (a batch for `kek rotate`). */
  envelopesUnder(kekId: string, limit: number): Promise<readonly EnvelopeRef[]>;
  /**
   * Replaces one envelope by its rewrapped form, only if the row still holds `ref.envelope` (a key
   * rotated or deleted meanwhile is left as it is). Returns whether it was replaced.
   */
  replaceEnvelope(ref: EnvelopeRef, rewrapped: Buffer): Promise<boolean>;
  /** Pushes the envelopes replaced by rewrapping out of the live files (PostgreSQL: VACUUM FULL). */
  purgeDead(): Promise<void>;
}

/** Leases of cluster-wide jobs: one holder per name at a time (src/cluster/job-lock.ts). */
export interface JobLeaseRepo {
  /**
   * Takes the lease of `name` for `holder` until `until` when it is free, expired at `now`, or
   * already this holder's (a renewal), in one atomic statement. Resolves to whether `holder` has it.
   */
  acquire(name: string, holder: string, now: string, until: string): Promise<boolean>;
  /** Gives the lease up if `holder` still has it. */
  release(name: string, holder: string): Promise<void>;
}
