import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sealCanary } from '../../src/vault/kek-check.js';
import { WRITE_VIEW_MAX_AGE_MS, createKeyring } from '../../src/vault/keyring.js';
import { createLocalKek } from '../../src/vault/local-kek.js';
import { inheritMacKeys } from '../../src/vault/mac-keys.js';
import { createEnvelopeVault, envelopeKekId, type KeyEncryptionKey } from '../../src/vault/vault.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { keyInput, newAccount } from '../store/helpers.js';

/**
 * The KEK-version bookkeeping a rotation relies on, on SQLite and PostgreSQL: a keyring that picks
 * up a version recorded by another process, writes under the newest, keeps MACs across versions and
 * drops a retired version; and the store purging replaced envelopes from its live files.
 */
const A = createLocalKek(Buffer.alloc(32, 0x1a));
const B = createLocalKek(Buffer.alloc(32, 0x1b));
const idOf = (kek: KeyEncryptionKey) => kek.fingerprint.toString('hex');

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`KEK versions in the store (${fixture.name})`, () => {
    let opened: OpenedDatabase | undefined;
    afterEach(async () => {
      await opened?.cleanup();
      opened = undefined;
    });

    it('a keyring loads a version recorded meanwhile, seals under the newest, keeps its MACs, drops a retired one', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const vaultA = createEnvelopeVault(A);
      await store.keks.add({
        id: idOf(A),
        provider: 'local',
        label: null,
        canary: await sealCanary(vaultA),
        createdAt: '2026-01-01T00:00:00.000Z',
      });
      const loads: string[] = [];
      const keyring = createKeyring({
        keks: store.keks,
        primary: A,
        loaders: [
          {
            provider: 'local',
            load: (id) => {
              loads.push(id);
              return Promise.resolve(id === idOf(B) ? B : undefined);
            },
          },
        ],
      });
      try {
        await keyring.refresh();
        const binding = { keyId: 'key_1', accountId: 'acct_1' };
        const underA = await keyring.encrypt(Buffer.from('sk-under-a'), binding);
        expect(envelopeKekId(underA)).toBe(idOf(A));
        const macBefore = await keyring.mac('idempotency-fingerprint', 'POST /v1/keys\n{}');

        // Another process (kek rotate) records B, with the MAC keys it inherits from A.
        const vaultB = createEnvelopeVault(B);
        await store.keks.add({
          id: idOf(B),
          provider: 'local',
          label: null,
          canary: await sealCanary(vaultB),
          macKeys: await inheritMacKeys(A, vaultB),
          createdAt: '2026-01-02T00:00:00.000Z',
        });
        const underB = await vaultB.encrypt(Buffer.from('sk-under-b'), binding);
        // Meeting an envelope under B loads B, once.
        expect((await keyring.decrypt(underB, binding)).toString()).toBe('sk-under-b');
        expect(loads).toEqual([idOf(B)]);
        expect((await keyring.decrypt(underA, binding)).toString()).toBe('sk-under-a');
        expect(keyring.kekId).toBe(idOf(B));
        expect(envelopeKekId(await keyring.encrypt(Buffer.from('sk-new'), binding))).toBe(idOf(B));
        expect(await keyring.mac('idempotency-fingerprint', 'POST /v1/keys\n{}')).toBe(macBefore);
        // B's own derivation would differ: the inherited key is what keeps the MAC.
        expect(await vaultB.mac('idempotency-fingerprint', 'POST /v1/keys\n{}')).not.toBe(macBefore);

        await store.keks.retire(idOf(A), '2026-01-03T00:00:00.000Z');
        await keyring.refresh();
        expect(keyring.heldIds()).toEqual([idOf(B)]);
        await expect(keyring.decrypt(underA, binding)).rejects.toMatchObject({ code: 'wrong_kek' });
        const versions = await store.keks.list();
        expect(versions.map((v) => [v.id, v.retiredAt !== null, v.macKeys !== null])).toEqual([
          [idOf(A), true, false],
          [idOf(B), false, true],
        ]);
      } finally {
        await keyring.close();
      }
    });

    it('a newest version this process cannot load: writes refused as kek_unavailable, never sealed under the older', async () => {
      opened = await fixture.create();
      const { store } = opened;
      for (const [kek, at] of [
        [A, '2026-01-01T00:00:00.000Z'],
        [B, '2026-01-02T00:00:00.000Z'],
      ] as const) {
        await store.keks.add({
          id: idOf(kek),
          provider: 'local',
          label: null,
          canary: await sealCanary(createEnvelopeVault(kek)),
          createdAt: at,
        });
      }
      const keyring = createKeyring({ keks: store.keks, primary: A, loaders: [] });
      try {
        await keyring.refresh();
        const binding = { keyId: 'key_1', accountId: 'acct_1' };
        await expect(keyring.encrypt(Buffer.from('x'), binding)).rejects.toMatchObject({
          code: 'kek_unavailable',
        });
        const underB = await createEnvelopeVault(B).encrypt(Buffer.from('y'), binding);
        await expect(keyring.decrypt(underB, binding)).rejects.toMatchObject({ code: 'kek_unavailable' });
        // Not ready either: /readyz must take such a process out of a load balancer.
        expect(await keyring.healthy()).toBe(false);
      } finally {
        await keyring.close();
      }
    });

    it('healthy while every live version is held', async () => {
      opened = await fixture.create();
      const { store } = opened;
      await store.keks.add({
        id: idOf(A),
        provider: 'local',
        label: null,
        canary: await sealCanary(createEnvelopeVault(A)),
        createdAt: '2026-01-01T00:00:00.000Z',
      });
      const keyring = createKeyring({ keks: store.keks, primary: A, loaders: [] });
      try {
        await keyring.refresh();
        expect(await keyring.healthy()).toBe(true);
      } finally {
        await keyring.close();
      }
    });

    it('a wall clock stepped back does not keep an old view of the versions for writes', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const add = async (kek: KeyEncryptionKey, createdAt: string) =>
        store.keks.add({
          id: idOf(kek),
          provider: 'local',
          label: null,
          canary: await sealCanary(createEnvelopeVault(kek)),
          ...(kek === B ? { macKeys: await inheritMacKeys(A, createEnvelopeVault(B)) } : {}),
          createdAt,
        });
      await add(A, '2026-01-01T00:00:00.000Z');
      const keyring = createKeyring({
        keks: store.keks,
        primary: A,
        loaders: [{ provider: 'local', load: (id) => Promise.resolve(id === idOf(B) ? B : undefined) }],
      });
      const realNow = Date.now();
      try {
        await keyring.refresh();
        // The clock steps back an hour, then another process (kek rotate) records B.
        vi.spyOn(Date, 'now').mockImplementation(() => realNow - 3_600_000);
        await add(B, '2026-01-02T00:00:00.000Z');
        await new Promise((r) => setTimeout(r, WRITE_VIEW_MAX_AGE_MS + 200));
        // The view is older than a write may use, whatever the wall clock says: re-read, sealed under B.
        const sealed = await keyring.encrypt(Buffer.from('sk-after-step'), {
          keyId: 'key_1',
          accountId: 'acct_1',
        });
        expect(envelopeKekId(sealed)).toBe(idOf(B));
      } finally {
        vi.restoreAllMocks();
        await keyring.close();
      }
    });

    it('purgeDead leaves no replaced envelope in the live database files', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const { account } = await newAccount(store);
      const key = keyInput(account.id);
      const binding = { keyId: key.id, accountId: account.id };
      const old = await createEnvelopeVault(A).encrypt(Buffer.from('sk-purge-me'), binding);
      await store.keys.create({ ...key, ciphertext: old });
      const [ref] = await store.keks.envelopesUnder(idOf(A), 10);
      expect(ref).toBeDefined();
      if (ref === undefined) return;
      const { rewrapEnvelope } = await import('../../src/vault/vault.js');
      expect(await store.keks.replaceEnvelope(ref, await rewrapEnvelope(ref.envelope, ref, A, B))).toBe(true);
      // The wrapped DEK part is what changed: it must be gone, not merely superseded.
      const oldWrapped = old.subarray(9, 69);
      expect(await purgedWithin(PURGES, () => store.keks.purgeDead(), opened, oldWrapped)).toBe(true);
    });
  });
}

/** Whether `needle` is anywhere in the table's live storage: the SQLite file and WAL, or PostgreSQL's raw pages. */
/**
 * Purges until the needle is gone from the live pages, at most `times` times, 250 ms apart: VACUUM
 * FULL keeps a row version that a snapshot still open in the database may see, and the next purge
 * removes it. A CI run with two files at a time once failed here with no lock timeout logged, so
 * the purge had run; an autovacuum worker's ANALYZE in this new database is one such snapshot.
 * SQLite has no such horizon: its first purge must do.
 */
async function purgedWithin(
  times: number,
  purge: () => Promise<void>,
  opened: OpenedDatabase,
  needle: Buffer,
): Promise<boolean> {
  for (let i = 0; i < (opened.database === undefined ? 1 : times); i++) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 250));
    await purge();
    if (!(await liveBytesContain(opened, 'provider_keys', needle))) return true;
  }
  return false;
}

const PURGES = 20;

async function liveBytesContain(opened: OpenedDatabase, table: string, needle: Buffer): Promise<boolean> {
  if (opened.database === undefined) {
    for (const file of ['tokenproxy.db', 'tokenproxy.db-wal']) {
      const bytes = await readFile(path.join(opened.dataDir, file)).catch(() => Buffer.alloc(0));
      if (bytes.includes(needle)) return true;
    }
    return false;
  }
  const client = new pg.Client({ connectionString: opened.database });
  await client.connect();
  try {
    await client.query('create extension if not exists pageinspect');
    const { rows } = await client.query<{ n: string }>(
      `select pg_relation_size($1::regclass) / current_setting('block_size')::int as n`,
      [table],
    );
    for (let page = 0; page < Number(rows[0]?.n ?? 0); page++) {
      const raw = await client.query<{ p: Buffer }>(`select get_raw_page($1, $2) as p`, [table, page]);
      if (raw.rows[0]?.p.includes(needle)) return true;
    }
    return false;
  } finally {
    await client.end();
  }
}
