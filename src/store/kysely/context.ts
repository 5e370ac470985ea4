import type { Kysely } from 'kysely';
import type { DialectSupport } from '../dialect.js';
import type { Database } from '../schema.js';

export interface RepoContext {
  readonly db: Kysely<Database>;
  readonly dialect: DialectSupport;
}
