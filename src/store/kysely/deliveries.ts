import { sql } from 'kysely';
import { wholeMs } from '../../rules/whole-ms.js';
import type { ClaimedDelivery, DeliveryChannel, Page, PageQuery } from '../records.js';
import type { ClaimFilter, DeliveryOutcome, DeliveryRecord, DeliveryRepo, DisablePolicy } from '../store.js';
import type { RepoContext } from './context.js';
import { newestFirstPage, parseEventData, toWebhook } from './rows.js';
import { transact } from './transact.js';

/**
 * Due deliveries one claim looks at, oldest first. Far above what one claim takes (a lane's free
 * slots, at most 16), so the round-robin still sees many accounts among them.
 */
export const CLAIM_WINDOW = 500;

function isChannel(value: string): value is DeliveryChannel {
  return value === 'webhook' || value === 'email';
}

export class KyselyDeliveryRepo implements DeliveryRepo {
  constructor(private readonly ctx: RepoContext) {}

  async claim(
    now: string,
    leaseUntil: string,
    limit: number,
    filter: ClaimFilter = {},
  ): Promise<readonly ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const { db, dialect } = this.ctx;
    const due = (qb: typeof db) => {
      let query = qb
        .selectFrom('deliveries')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]));
      if (filter.channel !== undefined) query = query.where('channel', '=', filter.channel);
      const types = filter.eventTypes;
      if (types !== undefined)
        query = query.where((eb) =>
          eb.exists(
            eb
              .selectFrom('events')
              .select('events.id')
              .whereRef('events.id', '=', 'deliveries.event_id')
              .where('events.type', 'in', types.length === 0 ? [''] : types),
          ),
        );
      const webhooks = filter.skipWebhooks;
      if (webhooks !== undefined && webhooks.length > 0)
        query = query.where((eb) =>
          eb.or([eb('webhook_id', 'is', null), eb('webhook_id', 'not in', webhooks)]),
        );
      const accounts = filter.skipAccounts;
      if (accounts !== undefined && accounts.length > 0)
        query = query.where('account_id', 'not in', accounts);
      return query;
    };
    // A plain read first: an idle outbox is polled often, and SQLite would take its write lock for
    // every empty claim otherwise.
    const any = await due(db).select('deliveries.id').limit(1).executeTakeFirst();
    if (any === undefined) return [];

    return transact(db, async (trx) => {
      // Fair order without locking: the oldest due deliveries per endpoint (`nth`), then per account
      // in turns (`turn`), so an account with a deep backlog takes one turn like any other. The
      // chosen rows are then locked, skipping those another process holds (FOR UPDATE cannot
      // stand beside window functions in PostgreSQL).
      // Bounded: only the oldest due rows are ranked (deliveries_due_idx gives them in order), so a
      // deep backlog costs each claim the same. Accounts and endpoints at their cap are filtered out
      // before the window, so the worker's next claim (it claims until its lane is full) reaches the
      // accounts behind them.
      const window = due(trx)
        .select([
          'deliveries.id as id',
          'deliveries.account_id as account_id',
          'deliveries.webhook_id as webhook_id',
          'deliveries.next_attempt_at as next_attempt_at',
        ])
        .orderBy('deliveries.next_attempt_at')
        .orderBy('deliveries.id')
        .limit(Math.max(CLAIM_WINDOW, limit));
      const perEndpoint = trx
        .selectFrom(
          trx
            .selectFrom(window.as('w'))
            .select([
              'w.id as id',
              'w.account_id as account_id',
              'w.next_attempt_at as next_attempt_at',
              // An e-mail has no endpoint: each is its own partition.
              sql<number>`row_number() over (partition by coalesce(w.webhook_id, w.id) order by w.next_attempt_at, w.id)`.as(
                'nth',
              ),
            ])
            .as('d'),
        )
        .where('d.nth', '<=', filter.perWebhook ?? limit)
        .select((eb) => [
          'd.id as id',
          'd.next_attempt_at as next_attempt_at',
          eb.fn
            .agg<number>('row_number')
            .over((ob) => ob.partitionBy('d.account_id').orderBy('d.next_attempt_at').orderBy('d.id'))
            .as('turn'),
        ]);
      const candidates = await trx
        .selectFrom(perEndpoint.as('r'))
        .select('r.id')
        .where('r.turn', '<=', filter.perAccount ?? limit)
        .orderBy('r.turn')
        .orderBy('r.next_attempt_at')
        .orderBy('r.id')
        .limit(limit)
        .execute();
      if (candidates.length === 0) return [];
      const rows = await dialect
        .forUpdateSkipLocked(
          due(trx)
            .select('deliveries.id as id')
            .where(
              'deliveries.id',
              'in',
              candidates.map((c) => c.id),
            ),
        )
        .execute();
      const ids = rows.map((row) => row.id);
      if (ids.length === 0) return [];
      await trx.updateTable('deliveries').set({ locked_until: leaseUntil }).where('id', 'in', ids).execute();
      const claimed = await trx
        .selectFrom('deliveries')
        .innerJoin('events', 'events.id', 'deliveries.event_id')
        .leftJoin('webhooks', 'webhooks.id', 'deliveries.webhook_id')
        .select([
          'deliveries.id as id',
          'deliveries.channel as channel',
          'deliveries.attempts as attempts',
          'deliveries.email_to as email_to',
          'events.id as event_id',
          'events.account_id as event_account_id',
          'events.type as event_type',
          'events.created_at as event_created_at',
          'events.data as event_data',
          'webhooks.id as wh_id',
          'webhooks.account_id as wh_account_id',
          'webhooks.url as wh_url',
          'webhooks.events as wh_events',
          'webhooks.secret as wh_secret',
          'webhooks.created_at as wh_created_at',
          'webhooks.disabled_at as wh_disabled_at',
          'webhooks.disabled_reason as wh_disabled_reason',
          'webhooks.failing_since as wh_failing_since',
        ])
        .where('deliveries.id', 'in', ids)
        .orderBy('deliveries.next_attempt_at')
        .execute();
      return claimed.map((row): ClaimedDelivery => {
        if (!isChannel(row.channel))
          throw new Error(`unexpected stored value in deliveries.channel: ${row.channel}`);
        const webhook =
          row.wh_id === null ||
          row.wh_account_id === null ||
          row.wh_url === null ||
          row.wh_events === null ||
          row.wh_secret === null ||
          row.wh_created_at === null
            ? null
            : toWebhook({
                id: row.wh_id,
                account_id: row.wh_account_id,
                url: row.wh_url,
                events: row.wh_events,
                secret: row.wh_secret,
                created_at: row.wh_created_at,
                disabled_at: row.wh_disabled_at,
                disabled_reason: row.wh_disabled_reason,
                failing_since: row.wh_failing_since,
              });
        return {
          id: row.id,
          channel: row.channel,
          attempts: row.attempts,
          emailTo: row.email_to,
          webhook,
          event: {
            id: row.event_id,
            accountId: row.event_account_id,
            type: row.event_type,
            createdAt: row.event_created_at,
            data: parseEventData(row.event_data),
          },
        };
      });
    });
  }

  async complete(
    delivery: ClaimedDelivery,
    outcome: DeliveryOutcome,
    disable?: DisablePolicy,
  ): Promise<boolean> {
    return transact(this.ctx.db, async (trx) => {
      const attempts = delivery.attempts + 1;
      switch (outcome.kind) {
        case 'delivered':
          await trx
            .updateTable('deliveries')
            .set({
              status: 'delivered',
              attempts,
              locked_until: null,
              last_error: null,
              completed_at: outcome.at,
            })
            .where('id', '=', delivery.id)
            .execute();
          break;
        case 'retry':
          await trx
            .updateTable('deliveries')
            .set({
              attempts,
              locked_until: null,
              last_error: outcome.error,
              next_attempt_at: outcome.nextAttemptAt,
            })
            .where('id', '=', delivery.id)
            .where('status', '=', 'pending')
            .execute();
          break;
        case 'failed':
          await trx
            .updateTable('deliveries')
            .set({
              status: 'failed',
              attempts,
              locked_until: null,
              last_error: outcome.error,
              completed_at: outcome.at,
            })
            .where('id', '=', delivery.id)
            .execute();
          break;
      }
      const webhookId = delivery.channel === 'webhook' ? delivery.webhook?.id : undefined;
      if (webhookId === undefined) return false;
      if (outcome.attempt !== undefined) {
        // A lease that ran out can make an attempt twice under one number: the first record stays.
        await trx
          .insertInto('delivery_attempts')
          .values({
            delivery_id: delivery.id,
            attempt: attempts,
            account_id: delivery.event.accountId,
            attempted_at: outcome.attempt.startedAt,
            status_code: outcome.attempt.statusCode,
            duration_ms: wholeMs(outcome.attempt.durationMs),
            error_class: outcome.attempt.errorClass,
          })
          .onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing())
          .execute();
      }
      if (outcome.kind === 'delivered') {
        await trx.updateTable('webhooks').set({ failing_since: null }).where('id', '=', webhookId).execute();
        return false;
      }
      await trx
        .updateTable('webhooks')
        .set({ failing_since: outcome.at })
        .where('id', '=', webhookId)
        .where('failing_since', 'is', null)
        .execute();
      if (disable === undefined) return false;
      const disabled = await trx
        .updateTable('webhooks')
        .set({ disabled_at: outcome.at, disabled_reason: disable.reason })
        .where('id', '=', webhookId)
        .where('disabled_at', 'is', null)
        .where('failing_since', '<=', disable.failingSinceAtOrBefore)
        .returning('id')
        .executeTakeFirst();
      if (disabled === undefined) return false;
      await trx
        .updateTable('deliveries')
        .set({
          status: 'failed',
          locked_until: null,
          last_error: 'endpoint disabled',
          completed_at: outcome.at,
        })
        .where('webhook_id', '=', webhookId)
        .where('status', '=', 'pending')
        .execute();
      return true;
    });
  }

  async countPending(): Promise<number> {
    const row = await this.ctx.db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    return row.n;
  }

  async listForWebhook(accountId: string, webhookId: string, page: PageQuery): Promise<Page<DeliveryRecord>> {
    const query = this.ctx.db
      .selectFrom('deliveries')
      .select((eb) => [
        'id',
        'event_id',
        'status',
        'attempts',
        'last_error',
        'created_at',
        'completed_at',
        eb
          .selectFrom('events')
          .select('type')
          .whereRef('events.id', '=', 'deliveries.event_id')
          .as('event_type'),
      ])
      .where('account_id', '=', accountId)
      .where('webhook_id', '=', webhookId);
    return newestFirstPage(query, page, (row) => ({
      id: row.id,
      eventId: row.event_id,
      eventType: row.event_type ?? 'unknown',
      status: row.status as DeliveryRecord['status'],
      attempts: row.attempts,
      lastError: row.last_error,
      createdAt: row.created_at,
      completedAt: row.completed_at,
    }));
  }
}
