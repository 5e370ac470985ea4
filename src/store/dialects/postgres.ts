import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { DialectDatabase, DialectSupport, SecretTable } from '../dialect.js';
import { StoreUnavailableError } from '../errors.js';
import { WriteHealth, guardDialect, type WriteRefusal } from '../guard.js';
import type { Database } from '../schema.js';
import { redactDatabaseUrl, urlSecrets } from '../database-url.js';
import { sessionPool } from './postgres-sessions.js';

export interface PostgresOptions {
  /** `postgres://` or `postgresql://` connection URL. */
  readonly url: string;
  /** How long to wait for a connection before reporting the database unavailable. */
  readonly connectionTimeoutMs?: number | undefined;
  readonly maxConnections?: number | undefined;
}

export const DEFAULT_CONNECTION_TIMEOUT_MS = 3000;

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'EPIPE',
]);

/**
 * SQLSTATEs raised while connecting or by a server going away: admin/crash shutdown, starting up,
 * too many connections, failed authentication, unknown database. Class 08 is added below.
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300', '28000', '28P01', '3D000']);

/** pg reports some connection failures only by message. */
const MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'is not queryable',
  'Cannot use a pool after calling end',
  'server closed the connection',
];

function isConnectionFailure(error: unknown): boolean {
  // Node reports a refused connection to a name with several addresses as an AggregateError.
  if (error instanceof AggregateError && error.errors.some(isConnectionFailure)) return true;
  if (!(error instanceof Error)) return false;
  const code: unknown = (error as Error & { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (NETWORK_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08'))
  ) {
    return true;
  }
  return MESSAGES.some((message) => error.message.includes(message));
}

/** 53100 disk_full; 25006 read_only_sql_transaction (a read-only database, a standby). */
function writeRefusal(error: unknown): WriteRefusal | undefined {
  if (!(error instanceof Error)) return undefined;
  const code: unknown = (error as Error & { code?: unknown }).code;
  if (code === '53100') return 'full';
  if (code === '25006') return 'read_only';
  return undefined;
}

/**
 * The database stopped a statement before it finished, and its transaction with it: 57014
 * query_canceled (`statement_timeout`, or an administrator's `pg_cancel_backend`), 55P03
 * lock_not_available (`lock_timeout`), 25P03 and 25P04 (the session ended by
 * `idle_in_transaction_session_timeout`, `transaction_timeout`). Nothing of it is stored; a retry
 * may well pass, so it is a reason to wait, not an internal error.
 */
const CANCELLED_CODES = new Set(['57014', '55P03', '25P03', '25P04']);

function wasCancelled(error: unknown): boolean {
  return error instanceof Error && CANCELLED_CODES.has(String((error as Error & { code?: unknown }).code));
}

function parseInt8(value: string): number {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed))
    throw new Error(`bigint value ${value} does not fit a JavaScript number`);
  return parsed;
}

export function createDatabase(options: PostgresOptions): DialectDatabase {
  const target = redactDatabaseUrl(options.url);
  // Per-pool type overrides, so parsing int8 as number does not leak into other pg users in the process.
  const types = new pg.TypeOverrides();
  types.setTypeParser(pg.types.builtins.INT8, 'text', parseInt8);
  const pool = new pg.Pool({
    connectionString: options.url,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? DEFAULT_CONNECTION_TIMEOUT_MS,
    max: options.maxConnections ?? 10,
    application_name: 'tokenproxy',
    types,
  });
  // An idle client whose server went away emits 'error' on the pool; unhandled, that would crash the
  // process. The next query that needs a connection reports the failure as StoreUnavailableError.
  pool.on('error', () => undefined);
  const health = new WriteHealth();
  const dialect: DialectSupport = {
    name: 'postgres',
    target,
    forUpdate: (query) => query.forUpdate(),
    forUpdateSkipLocked: (query) => query.forUpdate().skipLocked(),
    isConnectionFailure,
    writeRefusal: () => health.current(),
    purgeDestroyedSecrets: (db, tables) => vacuumFull(db, tables),
  };
  const db = new Kysely<Database>({
    dialect: guardDialect(new PostgresDialect({ pool: sessionPool(pool) }), {
      isConnectionFailure,
      writeRefusal,
      cancelled: wasCancelled,
      health,
      describe: `PostgreSQL at ${target}`,
      secrets: urlSecrets(options.url),
    }),
  });
  return { db, dialect };
}

/**
 * An UPDATE or DELETE leaves the old row version in the table's pages until VACUUM, and a plain
 * VACUUM only marks its space free; VACUUM FULL writes the table anew, so the old wrapped data key
 * and ciphertext are gone from the live files (WAL segments and backups keep them: docs/keys-and-kek.md).
 * It locks the table for the few milliseconds a small table takes. A waiting ACCESS EXCLUSIVE
 * request queues every later reader (the proxy's token lookups) behind it, so the lock is waited
 * for at most 100 ms (a long transaction holds it: give up); the next purge does the work.
 */
async function vacuumFull(db: Kysely<Database>, tables: readonly SecretTable[]): Promise<void> {
  if (tables.length === 0) return;
  await db.connection().execute(async (conn) => {
    await sql`set lock_timeout = '100ms'`.execute(conn);
    try {
      await sql`vacuum full ${sql.join(tables.map((t) => sql.table(t)))}`.execute(conn);
    } catch (err) {
      if (!lockNotHad(err)) throw err;
    } finally {
      await sql`reset lock_timeout`.execute(conn);
    }
  });
}

/** The lock_timeout of the purge ran out (55P03), which the guard reports as a cancellation. */
function lockNotHad(error: unknown): boolean {
  const cause = error instanceof StoreUnavailableError ? error.cause : error;
  return (cause as { code?: unknown } | undefined)?.code === '55P03';
}
