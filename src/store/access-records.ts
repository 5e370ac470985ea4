import type { AccountRecord, Page, PageQuery } from './records.js';
import type { OutboxEvent } from './store.js';

/**
 * Who may act on an account and what they did: named API keys (issue 18) and the audit log. Apart
 * from records.ts/store.ts so these two stay below the size at which a file is split.
 */

export type ApiKeyScope = 'full' | 'read';
export const API_KEY_SCOPES: readonly ApiKeyScope[] = ['full', 'read'];

/** An account API key. The key itself is never stored: only its SHA-256 digest, in the repo. */
export interface ApiKeyRecord {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly scope: ApiKeyScope;
  /** The first characters of the key (`svc_sk_Ab3d`), so people can tell their keys apart. */
  readonly start: string;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

export interface NewApiKey {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly scope: ApiKeyScope;
  readonly digest: string;
  readonly start: string;
  readonly createdAt: string;
}

/** A live API key with its account. */
export interface LiveApiKey {
  readonly account: AccountRecord;
  readonly key: ApiKeyRecord;
}

export interface ApiKeyRepo {
  create(key: NewApiKey): Promise<ApiKeyRecord>;
  /** The live key with this digest and its account: what authenticates a request. */
  findLive(digest: string): Promise<LiveApiKey | undefined>;
  /** The account's live keys, newest first. */
  list(accountId: string, page: PageQuery): Promise<Page<ApiKeyRecord>>;
  /** Revokes a live key; undefined when the account has no live key with this id. */
  revoke(accountId: string, keyId: string, at: string): Promise<ApiKeyRecord | undefined>;
  /**
   * Key rotation, in one transaction: revokes the account's live keys named `key.name` and creates
   * `key` with their scope (`full` when none was live). Returns the new key and the revoked ones.
   */
  replace(
    key: Omit<NewApiKey, 'scope'>,
    at: string,
  ): Promise<{ key: ApiKeyRecord; revoked: readonly ApiKeyRecord[] }>;
}

export type ActorType = 'api_key' | 'session' | 'cli';

/** Who made a change: an API key (by id and name), a dashboard session, or the operator's CLI. */
export interface Actor {
  readonly type: ActorType;
  /** The API key's id for `api_key`; null otherwise. */
  readonly id: string | null;
  /** The API key's name, `dashboard session` or `cli`. */
  readonly name: string;
}

export interface AuditEntry {
  readonly id: string;
  readonly accountId: string;
  readonly createdAt: string;
  readonly action: string;
  readonly objectId: string | null;
  readonly actor: Actor;
  readonly ip: string | null;
}

export interface AuditFilter {
  readonly action?: string | undefined;
  readonly objectId?: string | undefined;
}

export interface AuditRepo {
  /** Appends the entry and, when given, the event it announces, in one transaction. */
  record(entry: AuditEntry, event?: OutboxEvent): Promise<void>;
  /** The account's entries, newest first. */
  list(accountId: string, filter: AuditFilter, page: PageQuery): Promise<Page<AuditEntry>>;
}
