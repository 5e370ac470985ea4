import { AUDITED_EVENT_TYPES } from '../audit/actions.js';

/**
 * Event types tokenproxy emits (DESIGN §6). Every event is stored in a durable outbox before it is
 * delivered to webhooks (and, for breaches, by e-mail), so nothing is lost across a restart.
 */
export const EVENT_TYPES = [
  'breach.detected',
  'quota.threshold_reached',
  'token.revoked',
  'token.expired',
  'anomaly.detected',
  'budget.threshold_reached',
  'budget.exceeded',
  // Changes recorded in the audit log that subscribers can act on: listed once, there.
  ...AUDITED_EVENT_TYPES,
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/**
 * A webhook endpoint's test event (`POST /v1/webhooks/:id/test`). Not emitted by anything that
 * happens, so not an `EventType` subscribers choose; stored and listed like one.
 */
export const PING_EVENT_TYPE = 'ping';

/** What `GET /v1/events?type=` filters by: every stored type. */
export const LISTED_EVENT_TYPES = [...EVENT_TYPES, PING_EVENT_TYPE] as const;

export interface NewEvent {
  readonly accountId: string;
  readonly type: EventType;
  /** The event's `data` object, exactly as receivers will see it (snake_case). */
  readonly data: Readonly<Record<string, unknown>>;
}

/**
 * Records events in the outbox. `publish` resolves once the event is committed (after that it will
 * be delivered, at least once, even if the process dies); callers on the proxy path must not await
 * it inside a response.
 */
export interface EventPublisher {
  publish(event: NewEvent): Promise<void>;
}
