import type { StoreFileLoss } from './dialects/sqlite-file-watch.js';
import type { WriteRefusal } from './guard.js';
import type { AccountRepo } from './account-records.js';
import type { ApiKeyRepo, AuditRepo } from './access-records.js';
import type { DeliveryRepo, EventRepo, WebhookRepo } from './event-records.js';
import type { KekRepo } from './kek-records.js';
import type { AnomalyRepo, RequestLogRepo } from './log-records.js';
import type { RetentionRepo } from './retention-records.js';
import type { UsageModelRollupRepo, UsageRollupRepo } from './rollup-records.js';
import type { SessionRepo } from './session-records.js';
import type { KeyRepo, TokenRepo } from './token-records.js';
import type { WebhookToolRepo } from './webhook-tool-records.js';

// The repos' types live in a module per capability; these are re-exported so importers reach them
// through here (access, session, rollup, retention and webhook-tool records are imported from their own).
export type * from './account-records.js';
export type * from './event-records.js';
export type * from './kek-records.js';
export type * from './log-records.js';
export type * from './token-records.js';

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
  /**
   * Runs `work` with a store whose every repo shares one transaction: all of it commits, or none.
   * For a change and the audit entry that records it. Called inside such a store it joins the
   * transaction. Keep slow work (sealing a key with the KEK) outside: SQLite holds its one write
   * lock for the whole of it. Purges of destroyed secrets the repos ask for run after the commit; if
   * one fails, the committed result is still returned and the failure reported (`warn` of
   * openStore). Not for work that needs a connection of its own (retention's `reclaimSpace`).
   */
  transaction<T>(work: (tx: Store) => Promise<T>): Promise<T>;
  /**
   * The database server's wall clock in ms since the epoch, where it is a server of its own
   * (PostgreSQL): the one clock a cluster's members share (src/store/shared-clock.ts). Undefined on
   * SQLite, whose clock is this machine's.
   */
  readClock(): Promise<number | undefined>;
  /**
   * A migration the store records that this version does not know: a newer tokenproxy upgraded the
   * schema, maybe while this process runs (undefined when none, or when it cannot be read).
   */
  newerMigration(): Promise<string | undefined>;
  /** Resolves when the database answers a trivial query; rejects with StoreUnavailableError. */
  ping(): Promise<void>;
  /**
   * `full` or `read_only` while the database refuses this process's writes (reads still work), as
   * seen by the last write within a minute; undefined when writes get through.
   */
  writeRefusal?(): WriteRefusal | undefined;
  /**
   * SQLite opened with `watchFile`: which of its files no longer is at its path (deleted, replaced)
   * as of the last look, a few seconds ago; changes are refused meanwhile. Undefined when all are.
   */
  fileLoss?(): StoreFileLoss | undefined;
  close(): Promise<void>;
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

/** Leases of cluster-wide jobs: one holder per name at a time (src/cluster/job-lock.ts). */
export interface JobLeaseRepo {
  /**
   * Takes the lease of `name` for `holder` until `until` when it is free, expired at `now`, or
   * already this holder's (a renewal), in one atomic statement. Resolves to whether `holder` has it.
   */
  acquire(name: string, holder: string, now: string, until: string): Promise<boolean>;
  /** Gives the lease up if `holder` still has it. */
  release(name: string, holder: string): Promise<void>;
  /** Deletes the leases that ran out before `now` (an expired lease is free anyway); returns how many. */
  purgeExpired(now: string): Promise<number>;
}
