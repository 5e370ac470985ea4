import type { NewSession, SessionRecord, SessionRepo } from '../session-records.js';
import type { DashboardSessionsTable } from '../schema.js';
import type { RepoContext } from './context.js';

export class KyselySessionRepo implements SessionRepo {
  constructor(private readonly ctx: RepoContext) {}

  async create(session: NewSession): Promise<SessionRecord> {
    const row = await this.ctx.db
      .insertInto('dashboard_sessions')
      .values({
        digest: session.digest,
        account_id: session.accountId,
        api_key_id: session.apiKeyId,
        created_at: session.createdAt,
        last_seen_at: session.createdAt,
        idle_expires_at: session.idleExpiresAt,
        expires_at: session.expiresAt,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toSession(row);
  }

  async findLive(digest: string, now: string): Promise<SessionRecord | undefined> {
    // Read on every dashboard call, never cached: a key deleted or rotated by any process ends its
    // sessions from their next call.
    const row = await this.ctx.db
      .selectFrom('dashboard_sessions')
      .innerJoin('api_keys', 'api_keys.id', 'dashboard_sessions.api_key_id')
      .selectAll('dashboard_sessions')
      .where('dashboard_sessions.digest', '=', digest)
      .where('dashboard_sessions.idle_expires_at', '>', now)
      .where('dashboard_sessions.expires_at', '>', now)
      .where('api_keys.revoked_at', 'is', null)
      .executeTakeFirst();
    return row === undefined ? undefined : toSession(row);
  }

  async touch(digest: string, now: string, idleExpiresAt: string): Promise<void> {
    await this.ctx.db
      .updateTable('dashboard_sessions')
      .set((eb) => ({
        last_seen_at: now,
        // The idle expiry never outlives the absolute one.
        idle_expires_at: eb
          .case()
          .when('expires_at', '<', idleExpiresAt)
          .then(eb.ref('expires_at'))
          .else(idleExpiresAt)
          .end(),
      }))
      .where('digest', '=', digest)
      .execute();
  }

  async delete(digest: string): Promise<boolean> {
    const result = await this.ctx.db
      .deleteFrom('dashboard_sessions')
      .where('digest', '=', digest)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async purgeExpired(now: string): Promise<number> {
    const result = await this.ctx.db
      .deleteFrom('dashboard_sessions')
      .where((eb) => eb.or([eb('expires_at', '<=', now), eb('idle_expires_at', '<=', now)]))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function toSession(row: DashboardSessionsTable): SessionRecord {
  return {
    digest: row.digest,
    accountId: row.account_id,
    apiKeyId: row.api_key_id ?? '',
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    idleExpiresAt: row.idle_expires_at,
    expiresAt: row.expires_at,
  };
}
