import type {
  ClaimedDelivery,
  DeliveryChannel,
  EventRecord,
  Page,
  PageQuery,
  TokenRecord,
  WebhookRecord,
} from './records.js';
import type { AttemptErrorClass } from './webhook-tool-records.js';

/**
 * Store types of events: the outbox they are committed to, the webhook endpoints they fan out to and
 * the deliveries the worker claims and completes.
 */

/** An event ready for the outbox; `data` is the JSON object receivers will see. */
export interface OutboxEvent {
  readonly id: string;
  readonly accountId: string;
  readonly type: string;
  readonly createdAt: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** Builds the event of a token status change, from the token as stored after the change. */
export type TokenEventBuilder = (token: TokenRecord) => OutboxEvent;

export interface FanOutOptions {
  /** Event types that also get an e-mail to the account's `alert_email` (when it has one). */
  readonly emailTypes: readonly string[];
}

export interface EventRepo {
  /**
   * Commits the events and, in the same transaction, one pending delivery per enabled webhook of the
   * account that subscribes to the type (and an e-mail delivery for `emailTypes`).
   */
  append(events: readonly OutboxEvent[], options: FanOutOptions): Promise<void>;
  /** The account's events, newest first. */
  list(
    accountId: string,
    filter: { readonly type?: string | undefined },
    page: PageQuery,
  ): Promise<Page<EventRecord>>;
}

/** A webhook as created: no disabled or failing state yet (`secret` is a vault envelope). */
export type NewWebhook = Pick<WebhookRecord, 'id' | 'accountId' | 'url' | 'events' | 'secret' | 'createdAt'>;

export interface WebhookRepo {
  create(webhook: NewWebhook): Promise<WebhookRecord>;
  get(accountId: string, webhookId: string): Promise<WebhookRecord | undefined>;
  list(accountId: string, page: PageQuery): Promise<Page<WebhookRecord>>;
  /** Removes the endpoint and its pending deliveries; undefined when there is no such endpoint. */
  delete(accountId: string, webhookId: string): Promise<WebhookRecord | undefined>;
}

/** What happened to one delivery attempt. */
export type DeliveryOutcome = (
  | { readonly kind: 'delivered'; readonly at: string }
  | { readonly kind: 'retry'; readonly at: string; readonly nextAttemptAt: string; readonly error: string }
  /** No attempt left, or nothing to deliver to any more (endpoint deleted or disabled). */
  | { readonly kind: 'failed'; readonly at: string; readonly error: string }
) & {
  /** The request made, recorded as an attempt of a webhook delivery (none when nothing was sent). */
  readonly attempt?: AttemptFacts | undefined;
};

export interface AttemptFacts {
  readonly startedAt: string;
  readonly statusCode: number | null;
  readonly durationMs: number;
  readonly errorClass: AttemptErrorClass | null;
}

export interface DisablePolicy {
  /** An endpoint failing since at or before this instant is disabled. */
  readonly failingSinceAtOrBefore: string;
  readonly reason: string;
}

/**
 * Which due deliveries a claim may take, so the worker can keep lanes (e-mail, breach alerts) and
 * share its slots fairly between accounts and endpoints. Omitted fields do not restrict.
 */
export interface ClaimFilter {
  readonly channel?: DeliveryChannel | undefined;
  /** Only deliveries of events of these types. */
  readonly eventTypes?: readonly string[] | undefined;
  /** Endpoints already at their in-flight cap. */
  readonly skipWebhooks?: readonly string[] | undefined;
  /** Accounts already at their in-flight cap. */
  readonly skipAccounts?: readonly string[] | undefined;
  /**
   * At most this many per account in one claim, taken round-robin: every account's oldest due
   * delivery before any account's second, so one account's backlog never hides another's.
   */
  readonly perAccount?: number | undefined;
  /** At most this many per webhook endpoint in one claim. */
  readonly perWebhook?: number | undefined;
}

/** One delivery of an event to a webhook endpoint, as the Webhooks view lists it. */
export interface DeliveryRecord {
  readonly id: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly status: 'pending' | 'delivered' | 'failed';
  readonly attempts: number;
  readonly lastError: string | null;
  readonly createdAt: string;
  readonly completedAt: string | null;
}

export interface DeliveryRepo {
  /**
   * Claims up to `limit` pending deliveries due at `now` whose lease is free and that `filter`
   * admits, leasing them until `leaseUntil`; the oldest first, in round-robin order across accounts.
   * Two processes never claim the same delivery while its lease runs.
   */
  claim(
    now: string,
    leaseUntil: string,
    limit: number,
    filter?: ClaimFilter,
  ): Promise<readonly ClaimedDelivery[]>;
  /**
   * Records an attempt's outcome and releases the lease. For a webhook delivery it also keeps the
   * endpoint's `failing_since`, and disables the endpoint (failing its pending deliveries) per
   * `disable`. Returns true when this call disabled the endpoint.
   */
  complete(delivery: ClaimedDelivery, outcome: DeliveryOutcome, disable?: DisablePolicy): Promise<boolean>;
  /** Pending deliveries (any lease), for shutdown reports and tests. */
  countPending(): Promise<number>;
  /** The deliveries to one of the account's webhook endpoints, newest first. */
  listForWebhook(accountId: string, webhookId: string, page: PageQuery): Promise<Page<DeliveryRecord>>;
}
