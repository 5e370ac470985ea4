import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { ClaimedDelivery } from '../store/records.js';
import type { ClaimFilter, DeliveryOutcome, DisablePolicy, Store } from '../store/store.js';
import type { AttemptResult } from './webhook-sender.js';
import { settlesWithin } from '../runtime/settles-within.js';
import { canonical } from '../rules/duration.js';

/**
 * Sends one claimed delivery. `permanent` failures are not retried (nothing left to send it to).
 * `shutdown` aborts when the server stops waiting for attempts in flight (`close`'s grace ran out).
 */
export type DeliverySender = (
  delivery: ClaimedDelivery,
  shutdown: AbortSignal,
) => Promise<AttemptResult & { permanent?: boolean }>;

/**
 * A share of the worker's attempts with its own slots. Each lane claims only what its filter
 * admits, so work of one kind (hanging webhook endpoints) cannot hold the slots of another (breach
 * alerts, e-mail).
 */
export interface DeliveryLane {
  readonly name: string;
  readonly filter: Pick<ClaimFilter, 'channel' | 'eventTypes'>;
  /** Attempts in flight at most in this lane. */
  readonly concurrency: number;
  /** Attempts in flight at most per account in this lane: one account cannot fill the lane. */
  readonly perAccount: number;
}

export interface DeliveryWorkerOptions {
  readonly store: Pick<Store, 'deliveries'>;
  readonly logger: Logger;
  readonly now: () => Date;
  readonly send: DeliverySender;
  /** Delays between attempts; after the last one fails the delivery is marked failed. */
  readonly retrySchedule: readonly number[];
  readonly disableAfterMs: number;
  readonly lanes: readonly DeliveryLane[];
  /** Attempts in flight at most per webhook endpoint, across the lanes. */
  readonly perWebhook: number;
  readonly pollIntervalMs: number;
  /** How long a claimed attempt is reserved; longer than any attempt can take. */
  readonly leaseMs: number;
}

export interface DeliveryWorker {
  /** Look for due deliveries now (after a publish) instead of at the next poll. */
  nudge(): void;
  /** Resolves when no attempt is in flight and nothing due is left (tests). */
  idle(): Promise<void>;
  /**
   * Stops claiming and waits up to `graceMs` for attempts in flight, then aborts them: a hanging
   * receiver must not hold a stopping server past its drain timeout. An aborted attempt is recorded
   * like a failed one and retried on schedule (by this process after a restart, or another one).
   * Unsent work stays in the outbox.
   */
  close(graceMs?: number): Promise<void>;
}

/** In-flight attempts of one lane, per account. */
interface LaneState {
  readonly lane: DeliveryLane;
  size: number;
  readonly accounts: Map<string, number>;
}

/**
 * The outbox's sender. It runs beside the servers with a bounded number of attempts in flight, so
 * the proxy and the API never wait on a receiver. Claims are leased: another process sharing the
 * outbox skips what this one holds, and a crash only delays its attempts until the lease runs out.
 *
 * Scheduling is fair (DESIGN §6: one account's alerts are never queued behind another account's
 * deliveries): each lane has its own slots, an account holds at most `perAccount` of a lane's slots
 * and an endpoint at most `perWebhook` attempts, and every claim takes one delivery per account,
 * oldest first, so a slot that frees goes to the account that has waited longest.
 */
export function startDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const { logger } = options;
  const inFlight = new Set<Promise<void>>();
  const shutdown = new AbortController();
  const lanes: LaneState[] = options.lanes.map((lane) => ({ lane, size: 0, accounts: new Map() }));
  const webhooks = new Map<string, number>();
  let closed = false;
  /** The pass over the lanes under way, if any: `close` waits for it (a claim it is awaiting may still
   * hand it deliveries, which then run and are recorded before the store closes). */
  let ticking: Promise<void> | undefined;
  let again = false;
  let storeFailures = 0;
  let idleWaiters: (() => void)[] = [];

  const bump = (map: Map<string, number>, key: string, by: number): void => {
    const n = (map.get(key) ?? 0) + by;
    if (n <= 0) map.delete(key);
    else map.set(key, n);
  };
  const full = (map: Map<string, number>, cap: number): string[] => {
    const out: string[] = [];
    for (const [key, n] of map) if (n >= cap) out.push(key);
    return out;
  };

  /** Fills one lane's free slots with what is due and allowed. */
  async function fill(state: LaneState): Promise<void> {
    const { lane } = state;
    while (!closed && state.size < lane.concurrency) {
      const now = options.now();
      const claimed = await options.store.deliveries.claim(
        now.toISOString(),
        new Date(now.getTime() + options.leaseMs).toISOString(),
        lane.concurrency - state.size,
        {
          ...lane.filter,
          skipAccounts: full(state.accounts, lane.perAccount),
          skipWebhooks: full(webhooks, options.perWebhook),
          perAccount: 1,
          perWebhook: 1,
        },
      );
      storeFailures = 0;
      if (claimed.length === 0) return;
      for (const delivery of claimed) start(state, delivery);
    }
  }

  function start(state: LaneState, delivery: ClaimedDelivery): void {
    const account = delivery.event.accountId;
    const webhook = delivery.channel === 'webhook' ? delivery.webhook?.id : undefined;
    state.size++;
    bump(state.accounts, account, 1);
    if (webhook !== undefined) bump(webhooks, webhook, 1);
    const attempt = run(delivery).finally(() => {
      inFlight.delete(attempt);
      state.size--;
      bump(state.accounts, account, -1);
      if (webhook !== undefined) bump(webhooks, webhook, -1);
      // A slot is free: there may be more due work waiting for it.
      void tick();
    });
    inFlight.add(attempt);
  }

  function tick(): Promise<void> {
    if (closed) return Promise.resolve();
    if (ticking !== undefined) {
      again = true;
      return ticking;
    }
    ticking = fillAll().finally(() => {
      ticking = undefined;
      if (inFlight.size === 0) notifyIdle();
    });
    return ticking;
  }

  async function fillAll(): Promise<void> {
    try {
      do {
        again = false;
        // Lanes in order: the first ones (e-mail, breach alerts) are filled before the others claim.
        for (const state of lanes) await fill(state);
      } while (again && !closed);
    } catch (err) {
      if (storeFailures++ === 0) {
        logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'outbox: claiming deliveries failed',
        );
      }
    }
  }

  async function run(delivery: ClaimedDelivery): Promise<void> {
    let result: AttemptResult & { permanent?: boolean };
    const startedAt = options.now();
    const started = performance.now();
    try {
      result = await options.send(delivery, shutdown.signal);
    } catch (err) {
      result = { ok: false, error: err instanceof Error ? err.message : 'send failed', errorClass: 'other' };
    }
    const durationMs = performance.now() - started;
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
    const sent = result.statusCode !== undefined || (!result.ok && result.errorClass !== undefined);
    if (sent && delivery.channel === 'webhook') {
      outcome = {
        ...outcome,
        attempt: {
          startedAt: startedAt.toISOString(),
          statusCode: result.statusCode ?? null,
          durationMs,
          errorClass: result.ok ? null : (result.errorClass ?? 'other'),
        },
      };
    }
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
            reason: `Disabled at ${at.toISOString()}: every delivery attempt failed for more than ${canonical(options.disableAfterMs)} (webhook_disable_after; last error: ${result.error}). Fix the receiver, then re-enable it: PATCH /v1/webhooks/:id {"enabled": true}.`,
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
      if (ticking === undefined && inFlight.size === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    async close(graceMs = Infinity) {
      closed = true;
      clearInterval(timer);
      // A claim answered after this point still starts its deliveries: waited for here, they are sent
      // and recorded while the store is open (left running, they were sent and their record failed,
      // so the next start sent them again).
      // Monotonic: a wall clock stepped back while closing must not stretch the grace by the step.
      const closingAt = performance.now();
      if (ticking !== undefined && Number.isFinite(graceMs)) await settlesWithin(ticking, graceMs);
      else if (ticking !== undefined) await ticking;
      graceMs = Math.max(0, graceMs - (performance.now() - closingAt));
      if (
        inFlight.size > 0 &&
        Number.isFinite(graceMs) &&
        !(await settlesWithin(Promise.allSettled([...inFlight]), graceMs))
      ) {
        if (inFlight.size > 0) {
          logger.warn(
            { in_flight: inFlight.size, grace_ms: graceMs },
            'stopping: deliveries still in flight are cut off and retried on schedule',
          );
          shutdown.abort();
        }
      }
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}
