import { envelopeKekId } from '../../vault/vault.js';
import type { Page, PageQuery, WebhookRecord } from '../records.js';
import type { NewWebhook, WebhookRepo } from '../store.js';
import type { RepoContext } from './context.js';
import { newestFirstPage, toWebhook } from './rows.js';
import { transact } from './transact.js';

export class KyselyWebhookRepo implements WebhookRepo {
  constructor(private readonly ctx: RepoContext) {}

  async create(webhook: NewWebhook): Promise<WebhookRecord> {
    const row = await this.ctx.db
      .insertInto('webhooks')
      .values({
        id: webhook.id,
        account_id: webhook.accountId,
        url: webhook.url,
        events: JSON.stringify(webhook.events),
        secret: webhook.secret,
        kek_id: envelopeKekId(webhook.secret),
        created_at: webhook.createdAt,
        disabled_at: null,
        disabled_reason: null,
        failing_since: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toWebhook(row);
  }

  async get(accountId: string, webhookId: string): Promise<WebhookRecord | undefined> {
    const row = await this.ctx.db
      .selectFrom('webhooks')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', webhookId)
      .executeTakeFirst();
    return row === undefined ? undefined : toWebhook(row);
  }

  async list(accountId: string, page: PageQuery): Promise<Page<WebhookRecord>> {
    const query = this.ctx.db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId);
    return newestFirstPage(query, page, toWebhook);
  }

  async delete(accountId: string, webhookId: string): Promise<WebhookRecord | undefined> {
    return transact(this.ctx.db, async (trx) => {
      // Deliveries first, then the endpoint: the order a finishing delivery locks them in (it
      // updates its row, then the endpoint's failing_since). The other order deadlocked on PostgreSQL
      // when an endpoint was deleted while one of its deliveries completed.
      // Nothing is left to deliver them to; delivered and failed rows stay as history.
      await trx
        .deleteFrom('deliveries')
        .where('account_id', '=', accountId)
        .where('webhook_id', '=', webhookId)
        .where('status', '=', 'pending')
        .execute();
      const row = await trx
        .deleteFrom('webhooks')
        .where('account_id', '=', accountId)
        .where('id', '=', webhookId)
        .returningAll()
        .executeTakeFirst();
      return row === undefined ? undefined : toWebhook(row);
    });
  }
}
