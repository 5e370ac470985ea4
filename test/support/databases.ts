import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openStore, openStoreWithoutMigrating } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';

/**
 * The databases every store-backed test runs against. Loop over `databases` and wrap each suite in
 * `describe.skipIf(!fixture.available)`, so a missing TEST_DATABASE_URL shows as skipped, not absent.
 * Each `create()` gives a database of its own (a fresh SQLite directory, or a fresh PostgreSQL
 * database), so test files running in parallel never share data.
 */

export interface OpenedDatabase {
  readonly store: Store;
  /** The `database` setting that reaches this database (undefined for SQLite). */
  readonly database: string | undefined;
  /** A fresh temporary data directory (holds the SQLite file for the SQLite fixture). */
  readonly dataDir: string;
  /** Closes the store and removes the database and the data directory. */
  cleanup(): Promise<void>;
}

export interface CreateOptions {
  /** Run migrations before returning (default true). */
  readonly migrate?: boolean;
}

export interface DatabaseFixture {
  readonly name: 'sqlite' | 'postgres';
  readonly available: boolean;
  create(options?: CreateOptions): Promise<OpenedDatabase>;
}

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? '';

function tempDataDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'tokenproxy-test-'));
}

async function open(database: string | undefined, dataDir: string, options: CreateOptions): Promise<Store> {
  const settings = { database, dataDir };
  return options.migrate === false ? openStoreWithoutMigrating(settings) : openStore(settings);
}

const sqliteFixture: DatabaseFixture = {
  name: 'sqlite',
  available: true,
  async create(options = {}) {
    const dataDir = await tempDataDir();
    const store = await open(undefined, dataDir, options);
    return {
      store,
      database: undefined,
      dataDir,
      async cleanup() {
        await store.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  },
};

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

function databaseUrl(name: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

const postgresFixture: DatabaseFixture = {
  name: 'postgres',
  available: TEST_DATABASE_URL !== '',
  async create(options = {}) {
    // Lower-case hex only: the name needs no quoting rules beyond the double quotes below.
    const name = `tp_${randomBytes(8).toString('hex')}`;
    await admin((client) => client.query(`CREATE DATABASE "${name}"`));
    const database = databaseUrl(name);
    const dataDir = await tempDataDir();
    const dropDatabase = (): Promise<unknown> =>
      admin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    let store: Store;
    try {
      store = await open(database, dataDir, options);
    } catch (error) {
      await dropDatabase();
      await rm(dataDir, { recursive: true, force: true });
      throw error;
    }
    return {
      store,
      database,
      dataDir,
      async cleanup() {
        await store.close();
        await dropDatabase();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  },
};

export const databases: readonly DatabaseFixture[] = [sqliteFixture, postgresFixture];
