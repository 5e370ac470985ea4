import type { Insertable, Kysely } from 'kysely';
import { randomBase58 } from '../../ids/base58.js';
import type { EventRecord, Page, PageQuery } from '../records.js';
import type { Database, EventsTable } from '../schema.js';
import type { EventRepo, FanOutOptions, OutboxEvent } from '../store.js';
import type { RepoContext } from './context.js';
import { newestFirstPage, parseStringArray, toEvent } from './rows.js';
import { transact } from './transact.js';

const NO_EMAIL: FanOutOptions = { emailTypes: [] };

function subscribes(events: readonly string[], type: string): boolean {
  return events.includes('*') || events.includes(type);
}

/** An outbox event as its `events` row (its data as JSON text). */
export function eventRow(event: OutboxEvent): Insertable<EventsTable> {
  return {
    id: event.id,
    account_id: event.accountId,
    type: event.type,
    created_at: event.createdAt,
    data: JSON.stringify(event.data),
  };
}

/**
 * Inserts events and their delivery rows on `db`, which is the caller's transaction when the events
 * belong to a change (a revoke): both commit together or not at all.
 */
export async function insertEvents(
  db: Kysely<Database>,
  events: readonly OutboxEvent[],
  options: FanOutOptions = NO_EMAIL,
): Promise<void> {
  if (events.length === 0) return;
  await db.insertInto('events').values(events.map(eventRow)).execute();

  const accountIds = [...new Set(events.map((event) => event.accountId))];
  const hooks = await db
    .selectFrom('webhooks')
    .select(['id', 'account_id', 'events'])
    .where('account_id', 'in', accountIds)
    .where('disabled_at', 'is', null)
    .execute();
  const needsEmail = events.some((event) => options.emailTypes.includes(event.type));
  const emails = new Map<string, string>();
  if (needsEmail) {
    const rows = await db
      .selectFrom('accounts')
      .select(['id', 'alert_email'])
      .where('id', 'in', accountIds)
      .execute();
    for (const row of rows) if (row.alert_email !== null) emails.set(row.id, row.alert_email);
  }

  const deliveries = [];
  for (const event of events) {
    const base = {
      event_id: event.id,
      account_id: event.accountId,
      status: 'pending',
      next_attempt_at: event.createdAt,
      locked_until: null,
      last_error: null,
      created_at: event.createdAt,
      completed_at: null,
    };
    for (const hook of hooks) {
      if (hook.account_id !== event.accountId) continue;
      if (!subscribes(parseStringArray('webhooks.events', hook.events), event.type)) continue;
      deliveries.push({ ...base, id: deliveryId(), channel: 'webhook', webhook_id: hook.id, email_to: null });
    }
    const to = emails.get(event.accountId);
    if (to !== undefined && options.emailTypes.includes(event.type)) {
      deliveries.push({ ...base, id: deliveryId(), channel: 'email', webhook_id: null, email_to: to });
    }
  }
  if (deliveries.length > 0) await db.insertInto('deliveries').values(deliveries).execute();
}

function deliveryId(): string {
  return `dlv_${randomBase58(22)}`;
}

export class KyselyEventRepo implements EventRepo {
  constructor(private readonly ctx: RepoContext) {}

  async append(events: readonly OutboxEvent[], options: FanOutOptions): Promise<void> {
    if (events.length === 0) return;
    await transact(this.ctx.db, (trx) => insertEvents(trx, events, options));
  }

  async list(
    accountId: string,
    filter: { readonly type?: string | undefined },
    page: PageQuery,
  ): Promise<Page<EventRecord>> {
    let query = this.ctx.db.selectFrom('events').selectAll().where('account_id', '=', accountId);
    if (filter.type !== undefined) query = query.where('type', '=', filter.type);
    return newestFirstPage(query, page, toEvent);
  }
}
