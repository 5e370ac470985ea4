import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { openStoreWithoutMigrating } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { storeDb, storeInternals } from '../support/store-internals.js';
import { newAccount } from './helpers.js';

/**
 * PostgreSQL stops a statement before it finishes when a time limit the operator set runs out
 * (statement_timeout: 57014, lock_timeout: 55P03, idle_in_transaction_session_timeout: 25P03, the
 * session ended with it) or an administrator cancels it (57014 too). Nothing of its transaction is
 * stored, and a retry may pass: the store reports StoreUnavailableError `cancelled`, in words true of
 * every cause, never a bare driver error (a 500) and never a crash of the process.
 */
const postgres = databases.find((fixture) => fixture.name === 'postgres');

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

function expectCancelled(error: unknown, words: RegExp): void {
  expect(error).toBeInstanceOf(StoreUnavailableError);
  const cancelled = error as StoreUnavailableError;
  expect(cancelled.reason).toBe('cancelled');
  expect(cancelled.message).toContain('cancelled the statement before it finished');
  expect(cancelled.message).toContain('nothing was changed');
  expect(cancelled.message).toContain('or an administrator cancelled it');
  expect(cancelled.message).toMatch(words);
}

describe.skipIf(!postgres?.available)('a PostgreSQL statement the database cancels', () => {
  let opened: OpenedDatabase;
  const extra: Store[] = [];

  beforeAll(async () => {
    if (postgres === undefined) throw new Error('the PostgreSQL fixture is missing');
    opened = await postgres.create();
  });
  afterAll(async () => {
    for (const store of extra) await store.close();
    await opened?.cleanup();
  });

  /** A second store on the suite's database whose sessions start with `settings` (`-c name=value`). */
  async function storeWith(settings: Record<string, string>): Promise<Store> {
    const url = new URL(opened.database ?? '');
    const options = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`);
    url.searchParams.set('options', options.join(' '));
    const store = await openStoreWithoutMigrating({ database: url.toString(), dataDir: opened.dataDir });
    extra.push(store);
    return store;
  }

  async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: opened.database });
    await client.connect();
    try {
      return await run(client);
    } finally {
      await client.end();
    }
  }

  it('statement_timeout: the transaction it cut is rolled back whole, and the store says so', async () => {
    const store = await storeWith({ statement_timeout: '200' });
    const before = await opened.store.accounts.count();
    const error = await rejection(
      store.transaction(async (tx) => {
        await newAccount(tx);
        await sql`select pg_sleep(5)`.execute(storeDb(tx));
      }),
    );
    expectCancelled(error, /canceling statement due to statement timeout/);
    expect(await opened.store.accounts.count()).toBe(before);
    // The pool's session is fine: the next statement runs.
    expect(await store.accounts.count()).toBe(before);
  });

  it('an administrator’s pg_cancel_backend is reported in the same true words', async () => {
    const store = await storeWith({});
    const slow = rejection(sql`select pg_sleep(30) as tokenproxy_cancel_me`.execute(storeDb(store)));
    let cancelledOne = false;
    for (let i = 0; i < 100 && !cancelledOne; i += 1) {
      const { rows } = await admin((client) =>
        client.query<{ cancelled: boolean }>(
          "select pg_cancel_backend(pid) as cancelled from pg_stat_activity where query like '%tokenproxy_cancel_me%' and pid <> pg_backend_pid()",
        ),
      );
      cancelledOne = rows.some((row) => row.cancelled);
      if (!cancelledOne) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(cancelledOne).toBe(true);
    expectCancelled(await slow, /canceling statement due to user request/);
  });

  it('lock_timeout: a write that waits too long for a lock is cancelled, and nothing was stored', async () => {
    const store = await storeWith({ lock_timeout: '100' });
    const before = await opened.store.accounts.count();
    const holder = new pg.Client({ connectionString: opened.database });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table accounts in access exclusive mode');
      expectCancelled(await rejection(newAccount(store)), /lock timeout/);
    } finally {
      await holder.query('rollback');
      await holder.end();
    }
    expect(await opened.store.accounts.count()).toBe(before);
  });

  it('idle_in_transaction_session_timeout ends the session: reported as cancelled, the process lives on', async () => {
    const store = await storeWith({ idle_in_transaction_session_timeout: '100' });
    const before = await opened.store.accounts.count();
    // Before the fix the server's FATAL reached a checked-out pg client nobody listened to, and the
    // 'error' it emitted ended the process (here: an uncaught exception failing the run).
    const error = await rejection(
      store.transaction(async (tx) => {
        await newAccount(tx);
        await new Promise((resolve) => setTimeout(resolve, 600));
        await tx.accounts.count();
      }),
    );
    expectCancelled(error, /idle-in-transaction timeout/);
    expect(await opened.store.accounts.count()).toBe(before);
    // The ended session left the pool; a new one serves the next statement.
    expect(await store.accounts.count()).toBe(before);
  });

  it('the purge of destroyed secrets still gives up quietly on a lock it cannot have at once', async () => {
    const holder = new pg.Client({ connectionString: opened.database });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table provider_keys in access share mode');
      const { db, support } = storeInternals(opened.store);
      await expect(support.purgeDestroyedSecrets(db, ['provider_keys'])).resolves.toBeUndefined();
    } finally {
      await holder.query('rollback');
      await holder.end();
    }
  });
});
