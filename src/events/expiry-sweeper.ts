import type { Logger } from 'pino';
import type { JobLock } from '../cluster/job-lock.js';
import type { Store } from '../store/store.js';
import { tokenEvent } from './token-events.js';

export interface ExpirySweeperOptions {
  readonly store: Pick<Store, 'tokens'>;
  readonly logger: Logger;
  readonly now: () => Date;
  readonly intervalMs: number;
  /** Read at each sweep: start-up knows the proxy's public URL only after the proxy has bound. */
  readonly publicProxyUrl: () => string;
  readonly onExpired: () => void;
  /** Cluster-wide: one process sweeps at a time, the others skip their turn. */
  readonly jobs: JobLock;
}

export interface ExpirySweeper {
  /** One sweep now; resolves with the number of tokens expired. */
  sweep(): Promise<number>;
  close(): Promise<void>;
}

const BATCH = 100;
/** The sweep's name in `job_leases`. */
export const EXPIRY_SWEEP_JOB = 'expiry-sweep';

/**
 * Marks tokens past `expires_at` as `expired` and emits `token.expired` for each, in one transaction
 * per batch. One process of a cluster sweeps at a time (the `expiry-sweep` job lease); should two
 * ever overlap (a holder that lost the store mid-sweep), the store skips rows another one is
 * expiring and the update is conditional on `active`, so each token still gets exactly one event.
 */
export function startExpirySweeper(options: ExpirySweeperOptions): ExpirySweeper {
  let running: Promise<number> | undefined;
  let closed = false;
  let failures = 0;

  async function sweepOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const now = options.now();
      const expired = await options.store.tokens.expireDue(
        now.toISOString(),
        BATCH,
        tokenEvent('token.expired', now, options.publicProxyUrl()),
      );
      total += expired.length;
      if (expired.length < BATCH || closed) break;
    }
    if (total > 0) {
      options.logger.info({ tokens: total }, 'expired tokens marked and token.expired events queued');
      options.onExpired();
    }
    return total;
  }

  async function sweepIfDue(): Promise<number> {
    // Most sweeps find nothing: a read says so without the lease's and the update's write locks.
    // On SQLite the proxy's thread waits for those synchronously (busy_timeout, up to 5 s) while
    // another connection writes (the log writer, a retention pass, a CLI command on the same file),
    // and every request waits with it (docs/performance.md, issue 17 round seven).
    if (!(await options.store.tokens.anyDue(options.now().toISOString()))) return 0;
    const result = await options.jobs.runExclusive(EXPIRY_SWEEP_JOB, sweepOnce);
    return result.ran ? result.value : 0;
  }

  function sweep(): Promise<number> {
    running ??= sweepIfDue().finally(() => (running = undefined));
    return running;
  }

  const timer = setInterval(() => {
    if (running !== undefined) return;
    sweep().then(
      () => (failures = 0),
      (err: unknown) => {
        // Once per streak: a store that is down would otherwise log every interval.
        if (failures++ === 0) {
          options.logger.warn(
            { err: err instanceof Error ? err.message : String(err) },
            'expiry sweep failed',
          );
        }
      },
    );
  }, options.intervalMs);
  timer.unref();

  return {
    sweep,
    async close() {
      closed = true;
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
