import type { Kysely, Migration, MigrationProvider } from 'kysely';
import type { DialectName } from '../dialect.js';
import * as m0001 from './0001_initial.js';
import * as m0002 from './0002_request_log.js';
import * as m0003 from './0003_events.js';
import * as m0004 from './0004_idempotency.js';
import * as m0005 from './0005_token_expiry_index.js';
import * as m0006 from './0006_request_log_error_code.js';
import * as m0007 from './0007_kek_versions.js';
import * as m0008 from './0008_dashboard_sessions.js';
import * as m0009 from './0009_usage_rollups.js';
import * as m0010 from './0010_job_leases.js';
import * as m0011 from './0011_kek_mac_keys.js';
import * as m0012 from './0012_api_keys_audit.js';
import * as m0013 from './0013_retention_and_lookups.js';
import * as m0014 from './0014_usage_budgets.js';
import * as m0015 from './0015_session_api_key.js';

/** A migration module: plain Kysely DDL, branching on the dialect only for column types. */
interface MigrationModule {
  readonly up: (db: Kysely<unknown>, dialect: DialectName) => Promise<void>;
  readonly down?: (db: Kysely<unknown>, dialect: DialectName) => Promise<void>;
}

/**
 * Every migration, by name, in order. Imported statically rather than found by scanning a folder,
 * so the compiled `dist/` (or a bundle) carries them without any file-system layout assumptions.
 * Names are permanent: they are recorded in the database.
 */
const MIGRATIONS: Readonly<Record<string, MigrationModule>> = {
  '0001_initial': m0001,
  '0002_request_log': m0002,
  '0003_events': m0003,
  '0004_idempotency': m0004,
  '0005_token_expiry_index': m0005,
  '0006_request_log_error_code': m0006,
  '0007_kek_versions': m0007,
  '0008_dashboard_sessions': m0008,
  '0009_usage_rollups': m0009,
  '0010_job_leases': m0010,
  '0011_kek_mac_keys': m0011,
  '0012_api_keys_audit': m0012,
  '0013_retention_and_lookups': m0013,
  '0014_usage_budgets': m0014,
  '0015_session_api_key': m0015,
};

export function migrationProvider(dialect: DialectName): MigrationProvider {
  const migrations: Record<string, Migration> = {};
  for (const [name, module] of Object.entries(MIGRATIONS)) {
    const { up, down } = module;
    migrations[name] = {
      up: (db: Kysely<unknown>) => up(db, dialect),
      ...(down === undefined ? {} : { down: (db: Kysely<unknown>) => down(db, dialect) }),
    };
  }
  return { getMigrations: () => Promise.resolve(migrations) };
}

export const MIGRATION_NAMES: readonly string[] = Object.keys(MIGRATIONS);
