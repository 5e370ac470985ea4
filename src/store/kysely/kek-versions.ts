import { envelopeKekId } from '../../vault/vault.js';
import { sql } from 'kysely';
import type { EnvelopeRef, KekRepo, KekVersion, NewKekVersion } from '../store.js';
import type { RepoContext } from './context.js';
import { transact } from './transact.js';

/**
 * The tables holding vault envelopes, with how each row's envelope is bound (the vault's AAD). A
 * new table of envelopes belongs here, or `kek rotate` would leave it under the old KEK.
 */
export const ENVELOPE_TABLES = ['provider_keys', 'webhooks', 'idempotency_keys'] as const;
export type EnvelopeTable = (typeof ENVELOPE_TABLES)[number];

export class KyselyKekRepo implements KekRepo {
  constructor(private readonly ctx: RepoContext) {}

  async list(): Promise<readonly KekVersion[]> {
    const rows = await this.ctx.db
      .selectFrom('kek_versions')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((row) => ({
      id: row.id,
      provider: row.provider,
      label: row.label,
      canary: Buffer.from(row.canary),
      macKeys: row.mac_keys === null ? null : Buffer.from(row.mac_keys),
      createdAt: row.created_at,
      retiredAt: row.retired_at,
    }));
  }

  async add(version: NewKekVersion, options: { onlyIfNone?: boolean } = {}): Promise<boolean> {
    return transact(this.ctx.db, async (trx) => {
      if (options.onlyIfNone === true) {
        // Two first starts with different KEKs must not both register: one waits for the other.
        // SQLite has one writer at a time, and this transaction's first statement below is a write.
        if (this.ctx.dialect.name === 'postgres') {
          await sql`lock table kek_versions in exclusive mode`.execute(trx);
        }
        const existing = await trx.selectFrom('kek_versions').select('id').limit(1).executeTakeFirst();
        if (existing !== undefined) return false;
      }
      const result = await trx
        .insertInto('kek_versions')
        .values({
          id: version.id,
          provider: version.provider,
          label: version.label,
          canary: version.canary,
          mac_keys: version.macKeys ?? null,
          created_at: version.createdAt,
          retired_at: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    });
  }

  async retire(id: string, at: string): Promise<void> {
    await this.ctx.db
      .updateTable('kek_versions')
      .set({ retired_at: at })
      .where('id', '=', id)
      .where('retired_at', 'is', null)
      .execute();
  }

  async envelopeCounts(): Promise<ReadonlyMap<string, number>> {
    const counts = new Map<string, number>();
    for (const table of ENVELOPE_TABLES) {
      const rows = await this.ctx.db
        .selectFrom(table)
        .select(['kek_id', (eb) => eb.fn.countAll<number | string>().as('n')])
        .where('kek_id', 'is not', null)
        .groupBy('kek_id')
        .execute();
      for (const row of rows) {
        if (row.kek_id === null) continue;
        counts.set(row.kek_id, (counts.get(row.kek_id) ?? 0) + Number(row.n));
      }
    }
    return counts;
  }

  async envelopesUnder(kekId: string, limit: number): Promise<readonly EnvelopeRef[]> {
    const refs: EnvelopeRef[] = [];
    const keys = await this.ctx.db
      .selectFrom('provider_keys')
      .select(['id', 'account_id', 'ciphertext'])
      .where('kek_id', '=', kekId)
      .where('ciphertext', 'is not', null)
      .orderBy('id')
      .limit(limit)
      .execute();
    for (const row of keys) {
      if (row.ciphertext === null) continue;
      refs.push({
        table: 'provider_keys',
        keyId: row.id,
        accountId: row.account_id,
        envelope: Buffer.from(row.ciphertext),
      });
    }
    if (refs.length >= limit) return refs;
    const webhooks = await this.ctx.db
      .selectFrom('webhooks')
      .select(['id', 'account_id', 'secret'])
      .where('kek_id', '=', kekId)
      .orderBy('id')
      .limit(limit - refs.length)
      .execute();
    for (const row of webhooks) {
      refs.push({
        table: 'webhooks',
        keyId: row.id,
        accountId: row.account_id,
        envelope: Buffer.from(row.secret),
      });
    }
    if (refs.length >= limit) return refs;
    const replays = await this.ctx.db
      .selectFrom('idempotency_keys')
      .select(['account_id', 'idempotency_key', 'response_body'])
      .where('kek_id', '=', kekId)
      .where('response_body', 'is not', null)
      .orderBy('account_id')
      .orderBy('idempotency_key')
      .limit(limit - refs.length)
      .execute();
    for (const row of replays) {
      if (row.response_body === null) continue;
      refs.push({
        table: 'idempotency_keys',
        keyId: `idempotency:${row.idempotency_key}`,
        accountId: row.account_id,
        envelope: Buffer.from(row.response_body),
      });
    }
    return refs;
  }

  async replaceEnvelope(ref: EnvelopeRef, rewrapped: Buffer): Promise<boolean> {
    const kekId = envelopeKekId(rewrapped);
    const db = this.ctx.db;
    let result: { numUpdatedRows: bigint };
    switch (ref.table) {
      case 'provider_keys':
        result = await db
          .updateTable('provider_keys')
          .set({ ciphertext: rewrapped, kek_id: kekId })
          .where('account_id', '=', ref.accountId)
          .where('id', '=', ref.keyId)
          .where('ciphertext', '=', ref.envelope)
          .executeTakeFirst();
        break;
      case 'webhooks':
        result = await db
          .updateTable('webhooks')
          .set({ secret: rewrapped, kek_id: kekId })
          .where('account_id', '=', ref.accountId)
          .where('id', '=', ref.keyId)
          .where('secret', '=', ref.envelope)
          .executeTakeFirst();
        break;
      case 'idempotency_keys':
        result = await db
          .updateTable('idempotency_keys')
          .set({ response_body: rewrapped, kek_id: kekId })
          .where('account_id', '=', ref.accountId)
          .where('idempotency_key', '=', ref.keyId.slice('idempotency:'.length))
          .where('response_body', '=', ref.envelope)
          .executeTakeFirst();
        break;
    }
    return result.numUpdatedRows > 0n;
  }

  async purgeDead(): Promise<void> {
    await this.ctx.afterCommit((db) => this.ctx.dialect.purgeDestroyedSecrets(db, ENVELOPE_TABLES));
  }

  async sampleEnvelope(kekId: string): Promise<EnvelopeRef | undefined> {
    const key = await this.ctx.db
      .selectFrom('provider_keys')
      .select(['id', 'account_id', 'ciphertext'])
      .where('kek_id', '=', kekId)
      .where('ciphertext', 'is not', null)
      .limit(1)
      .executeTakeFirst();
    if (key?.ciphertext != null) {
      return {
        table: 'provider_keys',
        keyId: key.id,
        accountId: key.account_id,
        envelope: Buffer.from(key.ciphertext),
      };
    }
    const webhook = await this.ctx.db
      .selectFrom('webhooks')
      .select(['id', 'account_id', 'secret'])
      .where('kek_id', '=', kekId)
      .limit(1)
      .executeTakeFirst();
    if (webhook !== undefined) {
      return {
        table: 'webhooks',
        keyId: webhook.id,
        accountId: webhook.account_id,
        envelope: Buffer.from(webhook.secret),
      };
    }
    return undefined;
  }
}
