import type { StoreFileLoss } from './dialects/sqlite-file-watch.js';
import type { WriteRefusal } from './guard.js';
import { sql, type Kysely } from 'kysely';
import type { DialectName, DialectSupport } from './dialect.js';
import { errorName } from '../errors/summary.js';
import { StoreUnavailableError } from './errors.js';
import { KyselyAccountRepo } from './kysely/accounts.js';
import { KyselyApiKeyRepo } from './kysely/api-keys.js';
import { KyselyAuditRepo } from './kysely/audit.js';
import { KyselyDeliveryRepo } from './kysely/deliveries.js';
import { KyselyEventRepo } from './kysely/events.js';
import { KyselyIdempotencyRepo } from './kysely/idempotency.js';
import { KyselyKekRepo } from './kysely/kek-versions.js';
import { KyselyJobLeaseRepo } from './kysely/job-leases.js';
import { KyselyKeyRepo } from './kysely/keys.js';
import { KyselyAnomalyRepo, KyselyRequestLogRepo } from './kysely/logs.js';
import { KyselyRetentionRepo } from './kysely/retention.js';
import { KyselyWebhookToolRepo } from './kysely/webhook-tools.js';
import { KyselySessionRepo } from './kysely/sessions.js';
import { KyselyTokenRepo } from './kysely/tokens.js';
import { KyselyUsageRollupRepo } from './kysely/usage-rollups.js';
import { KyselyUsageModelRollupRepo } from './kysely/usage-model-rollups.js';
import { KyselyWebhookRepo } from './kysely/webhooks.js';
import { migrateToLatest, newerMigration } from './migrate.js';
import type { RepoContext } from './kysely/context.js';
import type { Database } from './schema.js';
import type { Store } from './store.js';

type AfterCommit = (db: Kysely<Database>) => Promise<void>;

/** Where the store reports a failure it does not throw (the process's logger in `serve`). */
export type StoreWarn = (message: string, error: unknown) => void;

function defaultWarn(message: string, error: unknown): void {
  process.emitWarning(`${message}: ${errorName(error)}`, 'TokenproxyStoreWarning');
}

/** The Store on Kysely: the same queries for SQLite and PostgreSQL; `DialectSupport` holds the differences. */
export class KyselyStore implements Store {
  readonly dialect: DialectName;
  readonly accounts: KyselyAccountRepo;
  readonly keys: KyselyKeyRepo;
  readonly tokens: KyselyTokenRepo;
  readonly requestLogs: KyselyRequestLogRepo;
  readonly anomalies: KyselyAnomalyRepo;
  readonly idempotency: KyselyIdempotencyRepo;
  readonly webhooks: KyselyWebhookRepo;
  readonly events: KyselyEventRepo;
  readonly deliveries: KyselyDeliveryRepo;
  readonly keks: KyselyKekRepo;
  readonly sessions: KyselySessionRepo;
  readonly usageRollups: KyselyUsageRollupRepo;
  readonly jobLeases: KyselyJobLeaseRepo;
  readonly usageModelRollups: KyselyUsageModelRollupRepo;
  readonly apiKeys: KyselyApiKeyRepo;
  readonly audit: KyselyAuditRepo;
  readonly retention: KyselyRetentionRepo;
  readonly webhookTools: KyselyWebhookToolRepo;
  private closing: Promise<void> | undefined;

  readonly #root: Kysely<Database>;
  readonly #warn: StoreWarn;

  /**
   * `inside` is given only to a store over a transaction (see `transaction`): the store's own
   * connection, and the list of tasks its repos leave for after the commit.
   */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly support: DialectSupport,
    warn: StoreWarn = defaultWarn,
    inside?: { readonly root: Kysely<Database>; readonly afterCommit: AfterCommit[] },
  ) {
    this.#root = inside?.root ?? db;
    this.#warn = warn;
    const root = this.#root;
    const ctx: RepoContext = {
      db,
      dialect: support,
      afterCommit: inside
        ? (task) => {
            inside.afterCommit.push(task);
            return Promise.resolve();
          }
        : (task) => task(root),
    };
    this.dialect = support.name;
    this.accounts = new KyselyAccountRepo(ctx);
    this.keys = new KyselyKeyRepo(ctx);
    this.tokens = new KyselyTokenRepo(ctx);
    this.requestLogs = new KyselyRequestLogRepo(ctx);
    this.anomalies = new KyselyAnomalyRepo(ctx);
    this.webhooks = new KyselyWebhookRepo(ctx);
    this.events = new KyselyEventRepo(ctx);
    this.deliveries = new KyselyDeliveryRepo(ctx);
    this.idempotency = new KyselyIdempotencyRepo(ctx);
    this.keks = new KyselyKekRepo(ctx);
    this.sessions = new KyselySessionRepo(ctx);
    this.usageRollups = new KyselyUsageRollupRepo(ctx);
    this.jobLeases = new KyselyJobLeaseRepo(ctx);
    this.usageModelRollups = new KyselyUsageModelRollupRepo(ctx);
    this.apiKeys = new KyselyApiKeyRepo(ctx);
    this.audit = new KyselyAuditRepo(ctx);
    this.retention = new KyselyRetentionRepo(ctx);
    this.webhookTools = new KyselyWebhookToolRepo(ctx);
  }

  async transaction<T>(work: (tx: Store) => Promise<T>): Promise<T> {
    if (this.db.isTransaction) return work(this);
    // A store over the transaction: its repos' own multi-statement methods join it (transact.ts).
    const afterCommit: AfterCommit[] = [];
    const result = await this.db
      .transaction()
      .execute((trx) =>
        work(new KyselyStore(trx, this.support, this.#warn, { root: this.#root, afterCommit })),
      );
    // The change is committed: a failure now must not answer as if it were not. What is left is
    // cleanup (purging destroyed secrets) that the next such purge also does, so it is reported.
    for (const task of afterCommit) {
      try {
        await task(this.#root);
      } catch (error) {
        this.#warn(
          'work after a committed change failed (destroyed secrets stay in the database files until the next purge)',
          error,
        );
      }
    }
    return result;
  }

  writeRefusal(): WriteRefusal | undefined {
    return this.support.writeRefusal?.();
  }

  async readClock(): Promise<number | undefined> {
    // SQLite's clock is this machine's own: nothing to read.
    if (this.support.name !== 'postgres') return undefined;
    // clock_timestamp(), not now(): now() is the transaction's start, fixed for its whole length.
    const { rows } = await sql<{
      ms: number;
    }>`select extract(epoch from clock_timestamp())::float8 * 1000 as ms`.execute(this.db);
    const ms = Number(rows[0]?.ms);
    if (!Number.isFinite(ms)) throw new StoreUnavailableError(`${this.support.target} answered no time`);
    return ms;
  }

  fileLoss(): StoreFileLoss | undefined {
    return this.support.fileLoss?.();
  }

  async ping(): Promise<void> {
    try {
      await sql`select 1`.execute(this.db);
    } catch (error) {
      if (error instanceof StoreUnavailableError) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      throw new StoreUnavailableError(`${this.support.target} did not answer: ${reason}`, { cause: error });
    }
  }

  newerMigration(): Promise<string | undefined> {
    return newerMigration(this.db);
  }

  /** Applies pending migrations; returns the names applied. */
  migrateToLatest(): Promise<string[]> {
    return migrateToLatest(this.db, this.support.name);
  }

  /** Idempotent, so shutdown paths and test cleanup can both call it. */
  close(): Promise<void> {
    // A store over a transaction does not own the connection: closing it would end everyone's.
    if (this.db.isTransaction) return Promise.resolve();
    this.closing ??= this.db.destroy();
    return this.closing;
  }
}
