import type { Kysely } from 'kysely';
import type { DialectSupport } from '../dialect.js';
import type { Database } from '../schema.js';

export interface RepoContext {
  /** The store's connection, or the transaction of `Store.transaction` the repo runs inside. */
  readonly db: Kysely<Database>;
  readonly dialect: DialectSupport;
  /**
   * Runs `task` on the store's own connection once the enclosing `Store.transaction` has committed,
   * or at once outside one: for work no transaction may hold, such as purging destroyed secrets from
   * the database files (a checkpoint, VACUUM FULL), which would also purge nothing before the commit.
   */
  afterCommit(task: (db: Kysely<Database>) => Promise<void>): Promise<void>;
}
