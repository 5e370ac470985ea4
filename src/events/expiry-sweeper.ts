import type { Logger } from 'pino';
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
}

export interface ExpirySweeper {
  /** One sweep now; resolves with the number of tokens expired. */
  sweep(): Promise<number>;
  close(): Promise<void>;
}

const BATCH = 100;

/**
 * Marks tokens past `expires_at` as `expired` and emits `token.expired` for each, in one transaction
 * per batch. Several processes may sweep at once: the store skips rows another one is expiring, and
 * the update is conditional on `active`, so each token gets exactly one event.
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

  function sweep(): Promise<number> {
    running ??= sweepOnce().finally(() => (running = undefined));
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
