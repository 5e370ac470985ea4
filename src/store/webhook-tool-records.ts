/** Store types of the webhook tooling (issue 18): attempts, test pings, redelivery, re-enabling. */
import type { EventRecord, WebhookRecord } from './records.js';
import type { OutboxEvent } from './store.js';

/** Why an attempt failed, without anything of the receiver's answer but its status code. */
export type AttemptErrorClass = 'http_status' | 'timeout' | 'connection' | 'dns' | 'refused' | 'other';

export interface DeliveryAttempt {
  readonly deliveryId: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly attemptedAt: string;
  readonly statusCode: number | null;
  readonly durationMs: number;
  /** Null when the attempt succeeded. */
  readonly errorClass: AttemptErrorClass | null;
}

export interface QueuedDelivery {
  readonly deliveryId: string;
  readonly webhookId: string;
}

export interface WebhookToolRepo {
  /**
   * Enables (clearing `disabled_at`, its reason and `failing_since`) or disables the endpoint; a
   * disabled endpoint's pending deliveries fail, as when tokenproxy disables it. Undefined when the
   * account has no such endpoint.
   */
  setEnabled(
    accountId: string,
    webhookId: string,
    enabled: boolean,
    at: string,
  ): Promise<WebhookRecord | undefined>;
  getEvent(accountId: string, eventId: string): Promise<EventRecord | undefined>;
  /** Enabled endpoints of the account that subscribe to `type`. */
  subscribers(accountId: string, type: string): Promise<readonly string[]>;
  /**
   * Queues one new pending delivery of the event to each endpoint, due at `at`, in one transaction;
   * a new event (`OutboxEvent`) is committed with them, an existing one (its id) is sent again.
   */
  enqueue(
    accountId: string,
    event: OutboxEvent | { readonly existingEventId: string },
    webhookIds: readonly string[],
    at: string,
  ): Promise<readonly QueuedDelivery[]>;
  /** The attempts of these deliveries, oldest first per delivery. */
  attempts(deliveryIds: readonly string[]): Promise<ReadonlyMap<string, readonly DeliveryAttempt[]>>;
}
