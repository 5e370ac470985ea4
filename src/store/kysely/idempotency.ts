import { envelopeKekId } from '../../vault/vault.js';
import type { IdempotencyBegin, IdempotencyRepo, IdempotencyStart } from '../store.js';
import type { RepoContext } from './context.js';
import { transact } from './transact.js';

export class KyselyIdempotencyRepo implements IdempotencyRepo {
  constructor(private readonly ctx: RepoContext) {}

  async begin(start: IdempotencyStart): Promise<IdempotencyBegin> {
    return transact(this.ctx.db, async (trx) => {
      // A row past its 24 h, or an in-flight row whose process evidently died, no longer holds the key.
      await trx
        .deleteFrom('idempotency_keys')
        .where('account_id', '=', start.accountId)
        .where('idempotency_key', '=', start.key)
        .where((eb) =>
          eb.or([
            eb('expires_at', '<=', start.now),
            eb.and([eb('response_status', 'is', null), eb('started_at', '<', start.staleBefore)]),
          ]),
        )
        .execute();
      const inserted = await trx
        .insertInto('idempotency_keys')
        .values({
          account_id: start.accountId,
          idempotency_key: start.key,
          fingerprint: start.fingerprint,
          started_at: start.now,
          expires_at: start.expiresAt,
          response_status: null,
          response_body: null,
        })
        .onConflict((oc) => oc.columns(['account_id', 'idempotency_key']).doNothing())
        .returning('account_id')
        .executeTakeFirst();
      if (inserted !== undefined) return { state: 'started' };
      const row = await trx
        .selectFrom('idempotency_keys')
        .select(['fingerprint', 'response_status', 'response_body'])
        .where('account_id', '=', start.accountId)
        .where('idempotency_key', '=', start.key)
        .executeTakeFirstOrThrow();
      if (row.fingerprint !== start.fingerprint) return { state: 'mismatch' };
      if (row.response_status === null || row.response_body === null) return { state: 'in_flight' };
      return { state: 'completed', status: row.response_status, body: Buffer.from(row.response_body) };
    });
  }

  async complete(accountId: string, key: string, status: number, body: Buffer): Promise<void> {
    await this.ctx.db
      .updateTable('idempotency_keys')
      .set({ response_status: status, response_body: body, kek_id: envelopeKekId(body) })
      .where('account_id', '=', accountId)
      .where('idempotency_key', '=', key)
      .execute();
  }

  async release(accountId: string, key: string): Promise<void> {
    await this.ctx.db
      .deleteFrom('idempotency_keys')
      .where('account_id', '=', accountId)
      .where('idempotency_key', '=', key)
      .where('response_status', 'is', null)
      .execute();
  }

  async purgeExpired(now: string): Promise<number> {
    const result = await this.ctx.db
      .deleteFrom('idempotency_keys')
      .where('expires_at', '<=', now)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
