import type { Logger } from 'pino';
import { createJobLock } from '../cluster/job-lock.js';
import type { Config } from '../config/load.js';
import type { ClaimedDelivery } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { Vault } from '../vault/vault.js';
import { VERSION } from '../version.js';
import { systemResolver, type HostResolver } from './address-guard.js';
import { startDeliveryWorker, type DeliveryLane, type DeliverySender } from './delivery-worker.js';
import { breachEmail, createMailer, type Mailer } from './email.js';
import { startExpirySweeper } from './expiry-sweeper.js';
import { createOutboxPublisher } from './outbox-publisher.js';
import type { EventPublisher } from './publisher.js';
import { CUT_OFF, sendWebhook } from './webhook-sender.js';

/** Event types that also go out by e-mail to the account's `alert_email`. */
export const EMAIL_EVENT_TYPES = ['breach.detected'] as const;

export const DELIVERY_TIMEOUT_MS = 15_000;
const POLL_INTERVAL_MS = 1000;

/**
 * The worker's lanes (DESIGN §6): e-mail has its own slots, breach alerts their own, and an account
 * holds only part of any lane, so hanging endpoints of one account delay no other account's alert.
 * With `PER_WEBHOOK` attempts per endpoint, one slow endpoint holds at most two slots.
 */
export const DELIVERY_LANES: readonly DeliveryLane[] = [
  { name: 'email', filter: { channel: 'email' }, concurrency: 4, perAccount: 2 },
  {
    name: 'breach',
    filter: { channel: 'webhook', eventTypes: ['breach.detected'] },
    concurrency: 8,
    perAccount: 2,
  },
  { name: 'webhook', filter: { channel: 'webhook' }, concurrency: 16, perAccount: 4 },
];
const PER_WEBHOOK = 2;

export interface StartEventsOptions {
  readonly store: Store;
  readonly vault: Vault;
  readonly config: Pick<
    Config,
    | 'smtpUrl'
    | 'smtpFrom'
    | 'allowPrivateWebhooks'
    | 'webhookRetrySchedule'
    | 'webhookDisableAfterMs'
    | 'expirySweepIntervalMs'
  >;
  readonly logger: Logger;
  readonly now?: (() => Date) | undefined;
  /**
   * Public addresses, read when needed: start-up learns them only after the listeners have bound,
   * while the publisher is needed before (the proxy's breach hook).
   */
  readonly links: { readonly publicProxyUrl: () => string; readonly dashboardUrl: () => string };
  readonly resolver?: HostResolver | undefined;
  readonly deliveryTimeoutMs?: number | undefined;
  readonly pollIntervalMs?: number | undefined;
}

export interface RunningEvents {
  readonly publisher: EventPublisher;
  /** Wake the delivery worker (after the API committed events of its own, such as a revoke). */
  nudge(): void;
  /** Marks expired tokens now instead of at the next interval. */
  sweepExpired(): Promise<number>;
  /** Resolves once no delivery is in flight or due right now (tests). */
  idle(): Promise<void>;
  readonly emailEnabled: boolean;
  /**
   * Events still waiting for a store that refused them get one last try; from then on an event the
   * store refuses is not held. Before the limits close at a stop: their last alerts would otherwise
   * wait on held events for the breach handler's whole drain deadline. `close` does it too.
   */
  stopHolding(): Promise<void>;
  /**
   * Stops the sweeper and the worker, letting attempts in flight finish for up to `graceMs` (then they
   * are cut off and retried later). Call after the listeners drained.
   */
  close(graceMs?: number): Promise<void>;
}

/** The events subsystem: outbox publisher, delivery worker (webhooks and e-mail) and expiry sweeper. */
export function startEvents(options: StartEventsOptions): RunningEvents {
  const { store, vault, config, logger } = options;
  const now = options.now ?? (() => new Date());
  const timeoutMs = options.deliveryTimeoutMs ?? DELIVERY_TIMEOUT_MS;
  const resolver = options.resolver ?? systemResolver;
  const mailer: Mailer | undefined =
    config.smtpUrl === undefined ? undefined : createMailer(config.smtpUrl, config.smtpFrom, timeoutMs);
  if (mailer === undefined) {
    logger.warn('e-mail alerts are off: set smtp_url to send breach alerts to the accounts’ alert_email');
  }

  const send: DeliverySender = async (delivery: ClaimedDelivery, shutdown: AbortSignal) => {
    if (delivery.channel === 'email') {
      if (mailer === undefined || delivery.emailTo === null) {
        return { ok: false, error: 'e-mail alerts are off (no smtp_url)', permanent: true };
      }
      const token =
        typeof delivery.event.data.token_id === 'string'
          ? await store.tokens.get(delivery.event.accountId, delivery.event.data.token_id)
          : undefined;
      // SMTP cannot be cut off mid-way: a stopping server stops waiting for it instead.
      return untilAborted(
        mailer.send({
          to: delivery.emailTo,
          ...breachEmail(delivery.event, token, options.links.dashboardUrl()),
        }),
        shutdown,
        CUT_OFF,
      );
    }
    const webhook = delivery.webhook;
    if (webhook === null) return { ok: false, error: 'endpoint deleted', permanent: true };
    if (webhook.disabledAt !== null) return { ok: false, error: 'endpoint disabled', permanent: true };
    const key = await vault.decrypt(webhook.secret, { keyId: webhook.id, accountId: webhook.accountId });
    try {
      return await sendWebhook(webhook.url, key, delivery.event, Math.floor(now().getTime() / 1000), {
        allowPrivate: config.allowPrivateWebhooks,
        resolver,
        timeoutMs,
        userAgent: `tokenproxy/${VERSION} (webhooks)`,
        shutdown,
      });
    } finally {
      key.fill(0);
    }
  };

  const worker = startDeliveryWorker({
    store,
    logger,
    now,
    send,
    retrySchedule: config.webhookRetrySchedule,
    disableAfterMs: config.webhookDisableAfterMs,
    lanes: DELIVERY_LANES,
    perWebhook: PER_WEBHOOK,
    pollIntervalMs: options.pollIntervalMs ?? POLL_INTERVAL_MS,
    // Longer than any attempt (DNS + connect + answer within the timeout), with room for the commit.
    leaseMs: timeoutMs * 2,
  });
  const nudge = (): void => worker.nudge();
  const publisher = createOutboxPublisher({
    store,
    now,
    emailTypes: mailer === undefined ? [] : EMAIL_EVENT_TYPES,
    onCommitted: nudge,
  });
  // Cluster-wide jobs (the sweep) run in one process at a time; see src/cluster/job-lock.ts.
  const jobs = createJobLock({ store, now });
  const sweeper = startExpirySweeper({
    store,
    jobs,
    logger,
    now,
    intervalMs: config.expirySweepIntervalMs,
    publicProxyUrl: options.links.publicProxyUrl,
    onExpired: nudge,
  });

  let closing: Promise<void> | undefined;
  let stoppedHolding: Promise<void> | undefined;
  const stopHolding = (): Promise<void> =>
    (stoppedHolding ??= publisher.close().then((lost) => {
      if (lost > 0)
        logger.error({ events: lost }, 'events not recorded at shutdown: the store refused writes');
    }));
  return {
    publisher,
    nudge,
    sweepExpired: () => sweeper.sweep(),
    idle: () => worker.idle(),
    emailEnabled: mailer !== undefined,
    stopHolding,
    close(graceMs) {
      closing ??= (async () => {
        await stopHolding();
        await sweeper.close();
        await jobs.close();
        await worker.close(graceMs);
        mailer?.close();
      })();
      return closing;
    },
  };
}

/** `work`'s answer, or `instead` as soon as `signal` aborts (the work itself goes on, unawaited). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal, instead: T): Promise<T> {
  if (signal.aborted) return Promise.resolve(instead);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => resolve(instead);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
