import { randomBase58 } from '../../ids/base58.js';
import type { EventRecord, WebhookRecord } from '../records.js';
import type { OutboxEvent } from '../store.js';
import type {
  AttemptErrorClass,
  DeliveryAttempt,
  QueuedDelivery,
  WebhookToolRepo,
} from '../webhook-tool-records.js';
import type { RepoContext } from './context.js';
import { eventRow } from './events.js';
import { parseStringArray, toEvent, toWebhook } from './rows.js';
import { transact } from './transact.js';

const DISABLED_BY_ACCOUNT = 'Disabled through the API (PATCH /v1/webhooks/:id {"enabled": false}).';

export class KyselyWebhookToolRepo implements WebhookToolRepo {
  constructor(private readonly ctx: RepoContext) {}

  async setEnabled(
    accountId: string,
    webhookId: string,
    enabled: boolean,
    at: string,
  ): Promise<WebhookRecord | undefined> {
    return transact(this.ctx.db, async (trx) => {
      const current = await trx
        .selectFrom('webhooks')
        .select(['id', 'disabled_at'])
        .where('account_id', '=', accountId)
        .where('id', '=', webhookId)
        .executeTakeFirst();
      if (current === undefined) return undefined;
      if (enabled) {
        await trx
          .updateTable('webhooks')
          .set({ disabled_at: null, disabled_reason: null, failing_since: null })
          .where('id', '=', webhookId)
          .execute();
      } else if (current.disabled_at === null) {
        await trx
          .updateTable('webhooks')
          .set({ disabled_at: at, disabled_reason: DISABLED_BY_ACCOUNT })
          .where('id', '=', webhookId)
          .execute();
        await trx
          .updateTable('deliveries')
          .set({ status: 'failed', locked_until: null, last_error: 'endpoint disabled', completed_at: at })
          .where('webhook_id', '=', webhookId)
          .where('status', '=', 'pending')
          .execute();
      }
      const row = await trx
        .selectFrom('webhooks')
        .selectAll()
        .where('id', '=', webhookId)
        .executeTakeFirstOrThrow();
      return toWebhook(row);
    });
  }

  async getEvent(accountId: string, eventId: string): Promise<EventRecord | undefined> {
    const row = await this.ctx.db
      .selectFrom('events')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', eventId)
      .executeTakeFirst();
    return row === undefined ? undefined : toEvent(row);
  }

  async subscribers(accountId: string, type: string): Promise<readonly string[]> {
    const rows = await this.ctx.db
      .selectFrom('webhooks')
      .select(['id', 'events'])
      .where('account_id', '=', accountId)
      .where('disabled_at', 'is', null)
      .orderBy('created_at')
      .execute();
    return rows
      .filter((row) => {
        const events = parseStringArray('webhooks.events', row.events);
        return events.includes('*') || events.includes(type);
      })
      .map((row) => row.id);
  }

  async enqueue(
    accountId: string,
    event: OutboxEvent | { readonly existingEventId: string },
    webhookIds: readonly string[],
    at: string,
  ): Promise<readonly QueuedDelivery[]> {
    return transact(this.ctx.db, async (trx) => {
      let eventId: string;
      if ('existingEventId' in event) eventId = event.existingEventId;
      else {
        eventId = event.id;
        await trx.insertInto('events').values(eventRow(event)).execute();
      }
      const queued = webhookIds.map((webhookId) => ({ deliveryId: `dlv_${randomBase58(22)}`, webhookId }));
      if (queued.length > 0) {
        await trx
          .insertInto('deliveries')
          .values(
            queued.map((q) => ({
              id: q.deliveryId,
              event_id: eventId,
              account_id: accountId,
              channel: 'webhook',
              webhook_id: q.webhookId,
              email_to: null,
              status: 'pending',
              next_attempt_at: at,
              locked_until: null,
              last_error: null,
              created_at: at,
              completed_at: null,
            })),
          )
          .execute();
      }
      return queued;
    });
  }

  async attempts(deliveryIds: readonly string[]): Promise<ReadonlyMap<string, readonly DeliveryAttempt[]>> {
    const out = new Map<string, DeliveryAttempt[]>();
    if (deliveryIds.length === 0) return out;
    const rows = await this.ctx.db
      .selectFrom('delivery_attempts')
      .selectAll()
      .where('delivery_id', 'in', deliveryIds)
      .orderBy('delivery_id')
      .orderBy('attempt')
      .execute();
    for (const row of rows) {
      const list = out.get(row.delivery_id) ?? [];
      list.push({
        deliveryId: row.delivery_id,
        attempt: row.attempt,
        attemptedAt: row.attempted_at,
        statusCode: row.status_code,
        durationMs: row.duration_ms,
        errorClass: row.error_class as AttemptErrorClass | null,
      });
      out.set(row.delivery_id, list);
    }
    return out;
  }
}
