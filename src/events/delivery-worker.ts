import type { Logger } from 'pino';
import type { ClaimedDelivery } from '../store/records.js';
import type { DeliveryOutcome, DisablePolicy, Store } from '../store/store.js';
import type { AttemptResult } from './webhook-sender.js';

/** Sends one claimed delivery. `permanent` failures are not retried (nothing left to send it to). */
export type DeliverySender = (delivery: ClaimedDelivery) => Promise<AttemptResult & { permanent?: boolean }>;

export interface DeliveryWorkerOptions {
  readonly store: Pick<Store, 'deliveries'>;
  readonly logger: Logger;
  readonly now: () => Date;
  readonly send: DeliverySender;
  /** Delays between attempts; after the last one fails the delivery is marked failed. */
  readonly retrySchedule: readonly number[];
  readonly disableAfterMs: number;
  /** Attempts in flight at most, across webhooks and e-mail. */
  readonly concurrency: number;
  readonly pollIntervalMs: number;
  /** How long a claimed attempt is reserved; longer than any attempt can take. */
  readonly leaseMs: number;
}

export interface DeliveryWorker {
  /** Look for due deliveries now (after a publish) instead of at the next poll. */
  nudge(): void;
  /** Resolves when no attempt is in flight and nothing due is left (tests). */
  idle(): Promise<void>;
  /** Stops claiming and waits for attempts in flight; unsent work stays in the outbox. */
  close(): Promise<void>;
}

/**
 * The outbox's sender. It runs beside the servers with a bounded number of attempts in flight, so
 * the proxy and the API never wait on a receiver. Claims are leased: another process sharing the
 * outbox skips what this one holds, and a crash only delays its attempts until the lease runs out.
 */
export function startDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const { logger } = options;
  const inFlight = new Set<Promise<void>>();
  let closed = false;
  let ticking = false;
  let again = false;
  let storeFailures = 0;
  let idleWaiters: (() => void)[] = [];

  async function tick(): Promise<void> {
    if (closed) return;
    if (ticking) {
      again = true;
      return;
    }
    ticking = true;
    try {
      do {
        again = false;
        const room = options.concurrency - inFlight.size;
        if (room <= 0) break;
        const now = options.now();
        const claimed = await options.store.deliveries.claim(
          now.toISOString(),
          new Date(now.getTime() + options.leaseMs).toISOString(),
          room,
        );
        storeFailures = 0;
        for (const delivery of claimed) {
          const attempt = run(delivery).finally(() => {
            inFlight.delete(attempt);
            // A slot is free: there may be more due work waiting for it.
            void tick();
          });
          inFlight.add(attempt);
        }
        if (claimed.length === room) again = true;
      } while (again && !closed);
    } catch (err) {
      if (storeFailures++ === 0) {
        logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'outbox: claiming deliveries failed',
        );
      }
    } finally {
      ticking = false;
      if (inFlight.size === 0) notifyIdle();
    }
  }

  async function run(delivery: ClaimedDelivery): Promise<void> {
    let result: AttemptResult & { permanent?: boolean };
    try {
      result = await options.send(delivery);
    } catch (err) {
      result = { ok: false, error: err instanceof Error ? err.message : 'send failed' };
    }
    const at = options.now();
    const attempt = delivery.attempts + 1;
    const delay = options.retrySchedule[delivery.attempts];
    let outcome: DeliveryOutcome;
    if (result.ok) outcome = { kind: 'delivered', at: at.toISOString() };
    else if (result.permanent === true || delay === undefined)
      outcome = { kind: 'failed', at: at.toISOString(), error: result.error };
    else
      outcome = {
        kind: 'retry',
        at: at.toISOString(),
        nextAttemptAt: new Date(at.getTime() + delay).toISOString(),
        error: result.error,
      };
    const fields = {
      delivery_id: delivery.id,
      event_id: delivery.event.id,
      event_type: delivery.event.type,
      channel: delivery.channel,
      webhook_id: delivery.webhook?.id,
      attempt,
    };
    if (result.ok) logger.info(fields, 'event delivered');
    else
      logger.warn({ ...fields, error: result.error, outcome: outcome.kind }, 'event delivery attempt failed');

    const disable: DisablePolicy | undefined =
      delivery.channel === 'webhook' && !result.ok
        ? {
            failingSinceAtOrBefore: new Date(at.getTime() - options.disableAfterMs).toISOString(),
            reason: `Disabled at ${at.toISOString()}: every delivery attempt failed for more than ${formatDuration(options.disableAfterMs)} (last error: ${result.error}). Delete the endpoint and create it again once the receiver works.`,
          }
        : undefined;
    try {
      const disabled = await options.store.deliveries.complete(delivery, outcome, disable);
      if (disabled)
        logger.warn({ webhook_id: delivery.webhook?.id }, 'webhook endpoint disabled after failing too long');
    } catch (err) {
      // The lease runs out and the attempt is made again: at-least-once, never lost.
      logger.warn(
        { ...fields, err: err instanceof Error ? err.message : String(err) },
        'outbox: recording an attempt failed',
      );
    }
  }

  function notifyIdle(): void {
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  const timer = setInterval(() => void tick(), options.pollIntervalMs);
  timer.unref();
  void tick();

  return {
    nudge: () => void tick(),
    idle() {
      if (!ticking && inFlight.size === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    async close() {
      closed = true;
      clearInterval(timer);
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

export function formatDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size} ${unit}`;
  return `${ms} ms`;
}
