import { statSync, statfsSync } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  sql,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type SqliteDialectConfig,
} from 'kysely';
import type { DialectDatabase, DialectSupport } from '../dialect.js';
import { StoreUnavailableError } from '../errors.js';
import { WriteHealth, guardDialect, type WriteRefusal } from '../guard.js';
import type { Database } from '../schema.js';
import { withStatementCache } from './sqlite-statements.js';
import {
  noticeOf,
  watchStoreFiles,
  type FileId,
  type StoreFileReport,
  type StoreFileWatch,
} from './sqlite-file-watch.js';

export const SQLITE_FILE_NAME = 'tokenproxy.db';
const BUSY_TIMEOUT_MS = 5000;

export interface SqliteOptions {
  /** Directory holding `tokenproxy.db`; created with mode 0700 when missing. */
  readonly dataDir: string;
  /** See OpenStoreOptions.logWriter. */
  readonly logWriter?: boolean | undefined;
  /** See OpenStoreOptions.watchFile. */
  readonly watchFile?: StoreFileReport | undefined;
}

/**
 * A deferred transaction that reads and then writes fails at once with SQLITE_BUSY when another
 * connection wrote in between; taking the write lock at BEGIN lets busy_timeout apply instead and
 * serialises writers, which is what makes the plan-cap check safe without row locks.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  constructor(
    config: SqliteDialectConfig,
    private readonly hooks: SqliteHooks,
  ) {
    super(config);
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  /**
   * On some errors SQLite rolls the transaction back itself (SQLITE_FULL: the disk is full; an I/O
   * error); a ROLLBACK after that fails with "cannot rollback - no transaction is active", which
   * Kysely would throw instead of the error that said what happened.
   */
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.hooks.rawDb()?.inTransaction === false) return;
    await super.rollbackTransaction(connection);
  }

  override async destroy(): Promise<void> {
    this.hooks.destroyed();
    await super.destroy();
  }
}

interface SqliteHooks {
  readonly rawDb: () => SqliteDatabase.Database | undefined;
  /** The connection is closing: what watches it stops. */
  readonly destroyed: () => void;
}

/** SQLite DDL is transactional; Kysely's default (false) would leave half-applied migrations behind. */
class TransactionalDdlAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class TokenproxySqliteDialect extends SqliteDialect {
  constructor(
    private readonly sqliteConfig: SqliteDialectConfig,
    private readonly hooks: SqliteHooks,
  ) {
    super(sqliteConfig);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.sqliteConfig, this.hooks);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlAdapter();
  }
}

async function openFile(dataDir: string, file: string, logWriter: boolean): Promise<SqliteDatabase.Database> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // SQLite gives its -wal and -shm files the main file's mode, so creating it 0600 ourselves keeps all
  // three private whatever the umask (SQLite alone would create 0644 under the usual 022). Only when
  // it does not exist yet: closing any descriptor of a file drops every POSIX lock the process holds
  // on it, so opening and closing the file beside a live connection (the log writer's, the second of
  // the process) took the other connection's locks away unseen, and another process could then
  // checkpoint and delete the WAL under it.
  await createPrivately(file);
  const db = new SqliteDatabase(file, { timeout: BUSY_TIMEOUT_MS });
  try {
    // Before any table exists this makes a new file return the pages retention frees to the file
    // system (`incremental_vacuum`); on an existing file it only takes effect after one VACUUM
    // (docs/operations.md), and until then freed pages are reused by new rows. Only on an empty file:
    // even a no-op setting of it counts as a write, and a start that fails (a wrong KEK) must leave
    // the file byte-identical.
    if (db.pragma('page_count', { simple: true }) === 0) db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('foreign_keys = ON');
    // Deleted content (a destroyed key's ciphertext) is overwritten with zeros instead of lingering in free space.
    db.pragma('secure_delete = ON');
    // In WAL mode NORMAL still never corrupts the file; a power cut may lose the last commits, which
    // for this connection's writes (request-log and anomaly rows, and the request counts and monthly
    // usage updated with them) is an acceptable price for not waiting on fsync every batch.
    if (logWriter) db.pragma('synchronous = NORMAL');
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Creates `file` empty with mode 0600 if it is missing; never opens an existing one. */
async function createPrivately(file: string): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  await handle.close();
}

const UNAVAILABLE_CODES = new Set(['SQLITE_CANTOPEN', 'SQLITE_NOTADB']);

/** Only failures to reach the file count; SQLITE_BUSY past the busy timeout is an ordinary error. */
function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code: unknown = (error as Error & { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('SQLITE_IOERR')))
    return true;
  return error.message.includes('database connection is not open');
}

/** SQLITE_FULL is also what SQLite answers when a write meets ENOSPC (or `max_page_count`). */
function writeRefusal(error: unknown): WriteRefusal | undefined {
  if (!(error instanceof Error)) return undefined;
  const code: unknown = (error as Error & { code?: unknown }).code;
  if (code === 'SQLITE_FULL') return 'full';
  if (typeof code === 'string' && code.startsWith('SQLITE_READONLY')) return 'read_only';
  return undefined;
}

/** Below this, an I/O error is most likely the disk being full (SQLite says only "disk I/O error"). */
const LOW_SPACE_BYTES = 1024 * 1024;

/**
 * SQLite reports ENOSPC as SQLITE_FULL where it writes pages, but as a plain I/O error where it
 * grows its shared-memory file (at open) or syncs: look at the file system before calling it that.
 */
function fullDiskHint(dataDir: string): (error: unknown) => string | undefined {
  return (error) => {
    const code: unknown = (error as { code?: unknown } | undefined)?.code;
    if (typeof code !== 'string' || !code.startsWith('SQLITE_IOERR')) return undefined;
    try {
      const fs = statfsSync(dataDir);
      const free = fs.bavail * fs.bsize;
      if (free >= LOW_SPACE_BYTES) return undefined;
      return `the file system holding ${dataDir} has ${free} bytes free: free space on it (df -h ${dataDir})`;
    } catch {
      return undefined;
    }
  };
}

export function sqliteFilePath(dataDir: string): string {
  return path.join(dataDir, SQLITE_FILE_NAME);
}

export function createDatabase(options: SqliteOptions): DialectDatabase {
  const file = sqliteFilePath(options.dataDir);
  let raw: SqliteDatabase.Database | undefined;
  let watch: StoreFileWatch | undefined;
  const health = new WriteHealth();
  const dialect: DialectSupport = {
    name: 'sqlite',
    target: file,
    forUpdate: (query) => query,
    forUpdateSkipLocked: (query) => query,
    isConnectionFailure,
    writeRefusal: () => health.current(),
    fileLoss: () => watch?.current(),
    async purgeDestroyedSecrets(db: Kysely<Database>): Promise<void> {
      // secure_delete already zeroed the old bytes in the pages, whichever tables they were in.
      // The WAL still holds the page images written before the deletion; fold it into the main file.
      await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
    },
    async incrementalVacuum(db: Kysely<Database>, pages: number): Promise<void> {
      // Through Kysely the pragma is stepped once, which frees one page; better-sqlite3's pragma()
      // runs it to the end. Holding Kysely's connection keeps it out of anyone's transaction.
      await db.connection().execute(() => {
        raw?.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
        return Promise.resolve();
      });
    },
  };
  const inner = new TokenproxySqliteDialect(
    {
      database: async () => {
        const opened = await openFile(options.dataDir, file, options.logWriter === true);
        try {
          if (options.watchFile !== undefined) watch = watchFile(opened, file, options.watchFile);
        } catch (error) {
          // Not a database after all (its first read failed): nothing keeps the file open.
          opened.close();
          throw error;
        }
        raw = opened;
        return withStatementCache(opened);
      },
    },
    { rawDb: () => raw, destroyed: () => watch?.stop() },
  );
  const db = new Kysely<Database>({
    dialect: guardDialect(inner, {
      isConnectionFailure,
      writeRefusal,
      ownRefusal: (error) => fileLossRefusal(error, file, watch),
      health,
      describe: `SQLite database ${file}`,
      secrets: [],
      explain: fullDiskHint(options.dataDir),
    }),
  });
  return { db, dialect };
}

/**
 * Watches the store's files from the moment `db` opened them. While one is lost, the connection is
 * `query_only`: SQLite itself then refuses every change, raw statements and BEGIN IMMEDIATE included,
 * and reads go on.
 */
function watchFile(db: SqliteDatabase.Database, file: string, report: StoreFileReport): StoreFileWatch {
  // A read makes SQLite open (or make) the -wal, so both files are known from the start.
  db.pragma('schema_version', { simple: true });
  return watchStoreFiles({
    database: file,
    opened: { database: fileId(file), wal: fileId(`${file}-wal`) },
    onChange(loss) {
      if (db.open) db.pragma(`query_only = ${loss === undefined ? 'OFF' : 'ON'}`);
      report(noticeOf(loss, file));
    },
  });
}

function fileId(file: string): FileId | undefined {
  const stats = statSync(file, { bigint: true, throwIfNoEntry: false });
  return stats === undefined ? undefined : { dev: stats.dev, ino: stats.ino };
}

/** SQLite words a `query_only` refusal as a read-only database: say why it refuses instead. */
function fileLossRefusal(
  error: unknown,
  file: string,
  watch: StoreFileWatch | undefined,
): StoreUnavailableError | undefined {
  const loss = watch?.current();
  const code: unknown = (error as { code?: unknown } | undefined)?.code;
  if (loss === undefined || typeof code !== 'string' || !code.startsWith('SQLITE_READONLY')) return undefined;
  const what = loss.change === 'missing' ? 'is gone from its path' : 'was replaced at its path';
  return new StoreUnavailableError(
    `SQLite database ${file} refuses changes: ${loss.path} ${what}, so what is stored now would be lost when ` +
      'the server stops (the error line logged when it was noticed says what to do)',
    { cause: error, reason: `file_${loss.change}` },
  );
}
