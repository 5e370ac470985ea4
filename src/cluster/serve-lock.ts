import { mkdir, rmdir, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { ConfigError } from '../config/config-error.js';
import type { Config } from '../config/load.js';
import { acquireInstanceLock, joinAsMember } from '../server/instance-lock.js';
import { redactDatabaseUrl, urlSecrets } from '../store/database-url.js';
import { unavailable } from '../store/guard.js';

/**
 * Who may serve a store (DESIGN §9). Without `redis`, one process per store: two would each count
 * limits alone. With `redis`, every process on the store is a member of one cluster. The two kinds
 * exclude each other: one process without `redis` beside a cluster counts alone as well. SQLite uses
 * `serve.lock` and `serve.members/` (src/server/instance-lock.ts); PostgreSQL a session advisory lock
 * held by a connection of its own for the life of the process (it goes with the process, however it
 * dies), exclusive without `redis` and shared by the members with it.
 *
 * Advisory lock keys (two int4, so pg_locks shows them as classid/objid): class ADVISORY_CLASS
 * ('toke'), object 1 = serving without redis, 2 = creating the first account.
 */
export const ADVISORY_CLASS = 0x746f6b65;
const SERVE_OBJECT = 1;
const BOOTSTRAP_OBJECT = 2;
const BOOTSTRAP_LOCK_DIR = 'bootstrap.lock';
const BOOTSTRAP_WAIT_MS = 30_000;

export interface ServeLock {
  release(): Promise<void>;
}

type LockConfig = Pick<Config, 'database' | 'dataDir' | 'redis'>;

export async function acquireServeLock(config: LockConfig, now: Date): Promise<ServeLock> {
  const member = config.redis !== undefined;
  if (config.database === undefined)
    return member ? joinAsMember(config.dataDir, now) : acquireInstanceLock(config.dataDir, now);
  return acquirePostgresServeLock(config.database, now, member);
}

function holderName(now: Date): string {
  // application_name is cut at 63 bytes by PostgreSQL: the pid and host come first.
  return `tokenproxy serve pid ${process.pid} on ${hostname()} since ${now.toISOString()}`.slice(0, 63);
}

async function connect(url: string, name: string): Promise<pg.Client> {
  // Loaded here, not at the top: a SQLite server never needs the PostgreSQL driver in its heap.
  const { default: driver } = await import('pg');
  const client = new driver.Client({
    connectionString: url,
    application_name: name,
    connectionTimeoutMillis: 10_000,
  });
  // A lost connection is reported by the store's own queries; this one only holds a lock.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    // Named as every other unreachable store is (exit 1, the database and the reason, no secret).
    throw unavailable({ describe: `PostgreSQL at ${redactDatabaseUrl(url)}`, secrets: urlSecrets(url) }, err);
  }
  return client;
}

async function acquirePostgresServeLock(url: string, now: Date, member: boolean): Promise<ServeLock> {
  const client = await connect(url, holderName(now));
  try {
    const take = member ? 'pg_try_advisory_lock_shared' : 'pg_try_advisory_lock';
    const got = await client.query<{ ok: boolean }>(`SELECT ${take}($1, $2) AS ok`, [
      ADVISORY_CLASS,
      SERVE_OBJECT,
    ]);
    if (got.rows[0]?.ok !== true) {
      const holder = await client.query<{
        application_name: string;
        client_addr: string | null;
        pid: number;
        mode: string;
      }>(
        `SELECT a.application_name, host(a.client_addr) AS client_addr, a.pid, l.mode
           FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        [ADVISORY_CLASS, SERVE_OBJECT],
      );
      const row = holder.rows[0];
      const holderText =
        row === undefined
          ? undefined
          : `"${row.application_name}", connected from ${row.client_addr ?? 'a local socket'}, PostgreSQL backend pid ${row.pid}`;
      const who = holderText === undefined ? 'another tokenproxy serve' : `another process (${holderText})`;
      throw new ConfigError(
        member
          ? `setting redis: ${who} is serving this PostgreSQL database without redis, counting limits alone. ` +
              'Stop it, or restart it with the same --redis redis://… so that both are members of one cluster.'
          : row?.mode === 'ShareLock'
            ? `setting redis: a tokenproxy cluster (processes with redis, such as ${holderText ?? 'another tokenproxy serve'}) ` +
              'is serving this PostgreSQL database. Start this one with the same --redis redis://… to join it, ' +
              'or stop them first: a process without redis would count limits alone.'
            : `setting database: ${who} is already serving this PostgreSQL database without redis. ` +
              'Stop it first, or run every process of the service with the same --redis redis://… so they share ' +
              'limits and revocations as one cluster.',
      );
    }
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return { release: () => client.end().catch(() => undefined) };
}

/**
 * Runs `create` (the first account's creation, a new store's HSM key) in one process at a time, so
 * processes starting together on an empty store create one `default` account (and one KEK) between
 * them: the second one in sees the first one's and creates nothing.
 */
export async function withBootstrapLock<T>(
  config: Pick<Config, 'database' | 'dataDir'>,
  create: () => Promise<T>,
): Promise<T> {
  if (config.database !== undefined) {
    const client = await connect(config.database, 'tokenproxy bootstrap');
    try {
      await client.query('SELECT pg_advisory_lock($1, $2)', [ADVISORY_CLASS, BOOTSTRAP_OBJECT]);
      return await create();
    } finally {
      // Ending the session releases the lock too, should the unlock itself fail.
      await client.end().catch(() => undefined);
    }
  }
  const dir = join(config.dataDir, BOOTSTRAP_LOCK_DIR);
  await lockDirectory(dir);
  try {
    return await create();
  } finally {
    await rmdir(dir).catch(() => undefined);
  }
}

/** mkdir is atomic on every file system: whoever creates the directory holds the lock. */
async function lockDirectory(dir: string): Promise<void> {
  // The wait is monotonic; the leftover's age compares file times, which only the wall clock has.
  const deadline = performance.now() + BOOTSTRAP_WAIT_MS;
  for (;;) {
    try {
      await mkdir(dir, { mode: 0o700 });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // A holder that died mid-bootstrap leaves the directory behind; creating an account takes ms.
    const since = await stat(dir).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (since > BOOTSTRAP_WAIT_MS) await rmdir(dir).catch(() => undefined);
    if (performance.now() > deadline) {
      throw new ConfigError(
        `setting data_dir: ${dir} exists: another tokenproxy is creating the first account. If none is, remove that directory.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
