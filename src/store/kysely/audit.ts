import type { Selectable } from 'kysely';
import type { ActorType, AuditEntry, AuditFilter, AuditRepo } from '../access-records.js';
import type { Page, PageQuery } from '../records.js';
import type { AuditLogTable } from '../schema.js';
import type { OutboxEvent } from '../store.js';
import type { RepoContext } from './context.js';
import { insertEvents } from './events.js';
import { newestFirstPage } from './rows.js';
import { transact } from './transact.js';

export class KyselyAuditRepo implements AuditRepo {
  constructor(private readonly ctx: RepoContext) {}

  async record(entry: AuditEntry, event?: OutboxEvent): Promise<void> {
    const row = {
      id: entry.id,
      account_id: entry.accountId,
      created_at: entry.createdAt,
      action: entry.action,
      object_id: entry.objectId,
      actor_type: entry.actor.type,
      actor_id: entry.actor.id,
      actor_name: entry.actor.name,
      ip: entry.ip,
    };
    if (event === undefined) {
      await this.ctx.db.insertInto('audit_log').values(row).execute();
      return;
    }
    await transact(this.ctx.db, async (trx) => {
      await trx.insertInto('audit_log').values(row).execute();
      await insertEvents(trx, [event]);
    });
  }

  async list(accountId: string, filter: AuditFilter, page: PageQuery): Promise<Page<AuditEntry>> {
    let query = this.ctx.db.selectFrom('audit_log').selectAll().where('account_id', '=', accountId);
    if (filter.action !== undefined) query = query.where('action', '=', filter.action);
    if (filter.objectId !== undefined) query = query.where('object_id', '=', filter.objectId);
    return newestFirstPage(query, page, toEntry);
  }
}

function toEntry(row: Selectable<AuditLogTable>): AuditEntry {
  return {
    id: row.id,
    accountId: row.account_id,
    createdAt: row.created_at,
    action: row.action,
    objectId: row.object_id,
    actor: { type: row.actor_type as ActorType, id: row.actor_id, name: row.actor_name },
    ip: row.ip,
  };
}
