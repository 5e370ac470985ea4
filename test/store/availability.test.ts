import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { openStore, openStoreWithoutMigrating } from '../../src/store/open.js';
import { databases } from '../support/databases.js';
import { rawQuery } from './helpers.js';

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('an unreachable database', () => {
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-unavailable-'));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('reports a refused PostgreSQL connection as StoreUnavailableError, naming no password', async () => {
    const database = 'postgres://tp:s3cr3t-pw@127.0.0.1:1/tokenproxy?password=s3cr3t-pw';
    const store = await openStoreWithoutMigrating({ database, dataDir: tmp, connectionTimeoutMs: 1000 });
    const started = Date.now();
    const error = await rejection(store.ping());
    expect(Date.now() - started).toBeLessThan(3000);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain('postgres://127.0.0.1:1/tokenproxy');
    expect((error as Error).message).not.toContain('s3cr3t');
    await store.close();

    await expect(openStore({ database, dataDir: tmp, connectionTimeoutMs: 1000 })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
  });

  it('gives up on a server that accepts but never answers after the connection timeout', async () => {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    try {
      const store = await openStoreWithoutMigrating({
        database: `postgresql://127.0.0.1:${port}/x`,
        dataDir: tmp,
        connectionTimeoutMs: 500,
      });
      const started = Date.now();
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(Date.now() - started).toBeLessThan(3000);
      await store.close();
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reports a SQLite data dir that cannot be created as StoreUnavailableError', async () => {
    const blocker = path.join(tmp, 'a-file');
    await writeFile(blocker, '');
    const store = await openStoreWithoutMigrating({
      database: undefined,
      dataDir: path.join(blocker, 'data'),
    });
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await store.close();
  });

  it('rejects a database setting that is neither empty nor a PostgreSQL URL', async () => {
    const error = await rejection(openStore({ database: 'mysql://root:hunter2@db/x', dataDir: tmp }));
    // A bad setting, whoever skipped loadConfig's check: the CLI exits 2.
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('database');
    expect(message).toContain('postgres://');
    expect(message).not.toContain('hunter2');
  });
});

const postgres = databases.find((fixture) => fixture.name === 'postgres');

describe.skipIf(!postgres?.available)('a PostgreSQL server that drops connections', () => {
  it('recovers after its idle connections are terminated', async () => {
    if (postgres === undefined) return;
    const opened = await postgres.create();
    try {
      await opened.store.ping();
      const url = new URL(opened.database ?? '');
      const name = url.pathname.slice(1);
      // 57P01 on the pool's idle client must neither crash the process nor poison the pool.
      await rawQuery(
        'postgres',
        opened,
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ? AND pid <> pg_backend_pid()',
        [name],
      );
      await opened.store.ping();
      expect(await opened.store.accounts.count()).toBe(0);
    } finally {
      await opened.cleanup();
    }
  });
});
