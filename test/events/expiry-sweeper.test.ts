import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createJobLock } from '../../src/cluster/job-lock.js';
import { startExpirySweeper, type ExpirySweeper } from '../../src/events/expiry-sweeper.js';
import type { JobLeaseRepo } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { at, createToken, newAccount } from '../store/helpers.js';

/**
 * The expiry sweep runs on the proxy's thread every `expiry_sweep_interval`. A sweep with nothing to
 * do must take no write lock: on SQLite it would wait, blocking that thread, while another connection
 * writes (the request-log writer, a retention pass, a CLI command). Held here by another connection,
 * which keeps writers out and lets readers in on both databases.
 */

/** Another connection keeps every writer out of `tokens` and `job_leases` until `release()`. */
async function holdWriteLock(
  fixture: 'sqlite' | 'postgres',
  opened: OpenedDatabase,
): Promise<{ release(): Promise<void> }> {
  if (fixture === 'sqlite') {
    const connection = new SqliteDatabase(path.join(opened.dataDir, 'tokenproxy.db'));
    connection.exec('BEGIN IMMEDIATE');
    return {
      release: () => {
        connection.exec('ROLLBACK');
        connection.close();
        return Promise.resolve();
      },
    };
  }
  const client = new pg.Client({ connectionString: opened.database });
  await client.connect();
  // EXCLUSIVE mode conflicts with every write and with SELECT … FOR UPDATE, not with plain reads.
  await client.query('BEGIN; LOCK TABLE tokens, job_leases IN EXCLUSIVE MODE');
  return {
    release: async () => {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`expiry sweep (${fixture.name})`, () => {
    let opened: OpenedDatabase | undefined;
    let sweeper: ExpirySweeper | undefined;
    afterEach(async () => {
      await sweeper?.close();
      await opened?.cleanup();
      sweeper = undefined;
      opened = undefined;
    });

    it('with nothing due takes no lease and no write lock; with a token due, expires it once', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const { account } = await newAccount(store);
      const token = await createToken(store, account.id, { token: { expiresAt: at(60) } });
      const acquired: string[] = [];
      const leases: JobLeaseRepo = {
        acquire: (name, holder, now, until) => {
          acquired.push(name);
          return store.jobLeases.acquire(name, holder, now, until);
        },
        release: (name, holder) => store.jobLeases.release(name, holder),
        purgeExpired: (now) => store.jobLeases.purgeExpired(now),
      };
      let now = new Date(at(30));
      let expiredSignals = 0;
      sweeper = startExpirySweeper({
        store,
        logger: pino({ level: 'silent' }),
        now: () => now,
        intervalMs: 3_600_000,
        publicProxyUrl: () => 'https://proxy.example',
        onExpired: () => expiredSignals++,
        jobs: createJobLock({ store: { jobLeases: leases }, now: () => now }),
      });

      const lock = await holdWriteLock(fixture.name, opened);
      let swept: unknown;
      try {
        // Before the read-first check this waited for the lock: on SQLite for busy_timeout (5 s,
        // the thread blocked) and then failed, on PostgreSQL until the lock went. A liveness bound,
        // not a speed one: a sweep that needs the lock cannot end while it is held.
        swept = await Promise.race([
          sweeper.sweep().catch((err: unknown) => err),
          new Promise((resolve) => setTimeout(() => resolve('still waiting for the write lock'), 10_000)),
        ]);
      } finally {
        await lock.release();
      }
      expect(swept).toBe(0);
      expect(acquired).toEqual([]);
      expect((await store.tokens.get(account.id, token.id))?.status).toBe('active');

      now = new Date(at(61));
      expect(await sweeper.sweep()).toBe(1);
      expect(await sweeper.sweep()).toBe(0);
      expect(acquired).toEqual(['expiry-sweep']);
      expect(expiredSignals).toBe(1);
      expect((await store.tokens.get(account.id, token.id))?.status).toBe('expired');
    });
  });
}
