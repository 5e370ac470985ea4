import type { Budget } from '../usage/budget.js';
import type { AccountRecord, PlanName } from './records.js';
import type { Database } from './schema.js';

/** Store types of accounts: creating one with its first API key, its plan, budget and usage. */

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
  /** How many rows of each table belong to the account: what `delete` would remove. */
  holdings(accountId: string): Promise<AccountHoldings>;
  /**
   * Deletes the account and every row of every table that has an `account_id` of it, in one
   * transaction (the operator's `tokenproxy accounts delete`); returns the rows deleted per table, or
   * undefined when there is no such account (nothing is deleted then). The destroyed secrets
   * (provider keys, webhook secrets, stored idempotent responses) are purged from the database files
   * after the commit, as for a key deletion.
   */
  delete(accountId: string): Promise<AccountHoldings | undefined>;
  /**
   * Deletes the rows still carrying the id of an account that no longer exists (written by requests
   * in flight at its deletion: request-log records, anomalies, rollups); undefined, deleting nothing,
   * when the account exists. These rows hold no secret, so nothing is purged.
   */
  deleteLeftovers(accountId: string): Promise<AccountHoldings | undefined>;
}

/** Every table with an `account_id` column, by the schema's types: what an account holds. */
export type AccountTable = {
  [T in keyof Database]: 'account_id' extends keyof Database[T] ? T : never;
}[keyof Database];

/** Rows per table of what an account holds (`accounts` itself not included). */
export type AccountHoldings = Readonly<Record<AccountTable, number>>;
