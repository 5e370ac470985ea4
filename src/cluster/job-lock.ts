import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Store } from '../store/store.js';

/**
 * Cluster-wide jobs that must run in one process at a time (the expiry sweep, retention purges):
 * a lease row per job name in the store (`job_leases`, migration 0010), the same on SQLite and
 * PostgreSQL, so it needs no connection of its own and works for processes on one SQLite data dir
 * as for many machines on one PostgreSQL database.
 *
 * Use:
 *
 *     const jobs = createJobLock({ store });
 *     const ran = await jobs.runExclusive('retention', async () => purge());
 *     // ran.ran === false: another process holds 'retention' now; try again at the next interval.
 *     await jobs.close(); // at shutdown: gives up the leases this process still holds
 *
 * `runExclusive` takes the lease (free, expired, or already ours), renews it every third of
 * `leaseMs` while `fn` runs, and gives it up when `fn` settles, so the next run may happen in any
 * process. A holder that dies (kill -9, power cut) keeps the job for at most `leaseMs`; then any
 * other process takes it over. A holder that cannot renew (store unreachable) keeps running `fn`:
 * jobs must be safe to run twice concurrently in that rare case (the expiry sweep and purges are,
 * their updates being conditional). Leases compare the `now` passed in: the server passes the
 * database's clock (src/cluster/shared-clock.ts), which every member shares.
 */

export interface JobLockOptions {
  readonly store: Pick<Store, 'jobLeases'>;
  /** How long a lease lasts without renewal (default 30 s): the longest wait after a holder dies. */
  readonly leaseMs?: number | undefined;
  readonly now?: (() => Date) | undefined;
  /** Names this process in the lease row (default: host, pid and a random suffix). */
  readonly holder?: string | undefined;
}

export type Exclusive<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

export interface JobLock {
  readonly holder: string;
  /** Runs `fn` if no other process holds `name`; resolves `{ ran: false }` at once otherwise. */
  runExclusive<T>(name: string, fn: () => Promise<T>): Promise<Exclusive<T>>;
  /** Gives up the leases held now (their jobs' `fn` keep running; call after stopping them). */
  close(): Promise<void>;
}

export const DEFAULT_JOB_LEASE_MS = 30_000;

export function createJobLock(options: JobLockOptions): JobLock {
  const { store } = options;
  const leaseMs = options.leaseMs ?? DEFAULT_JOB_LEASE_MS;
  const now = options.now ?? (() => new Date());
  const holder = options.holder ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const held = new Set<string>();

  const acquire = (name: string): Promise<boolean> => {
    const at = now();
    return store.jobLeases.acquire(
      name,
      holder,
      at.toISOString(),
      new Date(at.getTime() + leaseMs).toISOString(),
    );
  };

  return {
    holder,
    async runExclusive<T>(name: string, fn: () => Promise<T>): Promise<Exclusive<T>> {
      // One run per name in this process too: a second caller is "another holder".
      if (held.has(name)) return { ran: false };
      held.add(name);
      let mine = false;
      try {
        mine = await acquire(name);
      } finally {
        if (!mine) held.delete(name);
      }
      if (!mine) return { ran: false };
      const renew = setInterval(() => void acquire(name).catch(() => undefined), leaseMs / 3);
      renew.unref();
      try {
        return { ran: true, value: await fn() };
      } finally {
        clearInterval(renew);
        held.delete(name);
        await store.jobLeases.release(name, holder).catch(() => undefined);
      }
    },
    async close() {
      await Promise.all(
        [...held].map((name) => store.jobLeases.release(name, holder).catch(() => undefined)),
      );
      held.clear();
    },
  };
}
