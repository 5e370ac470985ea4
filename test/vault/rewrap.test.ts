import { afterEach, describe, expect, it } from 'vitest';
import { createLocalKek } from '../../src/vault/local-kek.js';
import {
  createEnvelopeVault,
  MIN_ENVELOPE_LENGTH,
  rewrapEnvelope,
  VaultError,
} from '../../src/vault/vault.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { keyInput, newAccount, T0 } from '../store/helpers.js';

/** The pieces `kek rotate` is built from: rewrapping an envelope, and the store's batches of them. */
const A = createLocalKek(Buffer.alloc(32, 0x0a));
const B = createLocalKek(Buffer.alloc(32, 0x0b));
const vaultA = createEnvelopeVault(A);
const vaultB = createEnvelopeVault(B);
const BINDING = { keyId: 'key_x', accountId: 'acct_x' };

describe('rewrapEnvelope', () => {
  it('moves the DEK to the other KEK and keeps the data part byte for byte', async () => {
    const secret = Buffer.from('sk-rewrap-me');
    const sealed = await vaultA.encrypt(secret, BINDING);
    const moved = await rewrapEnvelope(sealed, BINDING, A, B);
    expect(moved.length).toBe(sealed.length);
    expect(moved.subarray(MIN_ENVELOPE_LENGTH - 28)).toEqual(sealed.subarray(MIN_ENVELOPE_LENGTH - 28));
    expect((await vaultB.decrypt(moved, BINDING)).equals(secret)).toBe(true);
    await expect(vaultA.decrypt(moved, BINDING)).rejects.toMatchObject({ code: 'wrong_kek' });
  });

  it('refuses an envelope of another KEK, or bound elsewhere', async () => {
    const sealed = await vaultA.encrypt(Buffer.from('x'), BINDING);
    await expect(rewrapEnvelope(sealed, BINDING, B, A)).rejects.toMatchObject({ code: 'wrong_kek' });
    await expect(rewrapEnvelope(sealed, { ...BINDING, keyId: 'key_y' }, A, B)).rejects.toBeInstanceOf(
      VaultError,
    );
  });
});

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`KEK batches in the store (${fixture.name})`, () => {
    let opened: OpenedDatabase | undefined;
    afterEach(async () => {
      await opened?.cleanup();
      opened = undefined;
    });

    it('lists every envelope under a KEK in all three tables and replaces each only if unchanged', async () => {
      opened = await fixture.create();
      const { store } = opened;
      const { account } = await newAccount(store);
      const key = keyInput(account.id);
      await store.keys.create({
        ...key,
        ciphertext: await vaultA.encrypt(Buffer.from('sk-1'), { keyId: key.id, accountId: account.id }),
      });
      await store.webhooks.create({
        id: 'webhook_1',
        accountId: account.id,
        url: 'https://hooks.example/x',
        events: ['*'],
        secret: await vaultA.encrypt(Buffer.from('whsec'), { keyId: 'webhook_1', accountId: account.id }),
        createdAt: T0,
      });
      await store.idempotency.begin({
        accountId: account.id,
        key: 'idem-1',
        fingerprint: 'f',
        now: T0,
        expiresAt: '2099-01-01T00:00:00.000Z',
        staleBefore: T0,
      });
      await store.idempotency.complete(
        account.id,
        'idem-1',
        201,
        await vaultA.encrypt(Buffer.from('{"ok":true}'), {
          keyId: 'idempotency:idem-1',
          accountId: account.id,
        }),
      );
      expect(await store.keks.envelopeCounts()).toEqual(new Map([[vaultA.kekId, 3]]));

      const batch = await store.keks.envelopesUnder(vaultA.kekId, 10);
      expect(batch.map((r) => r.table).sort()).toEqual(['idempotency_keys', 'provider_keys', 'webhooks']);
      expect(await store.keks.envelopesUnder(vaultA.kekId, 2)).toHaveLength(2);

      const [first] = batch;
      if (first === undefined) throw new Error('no envelope');
      // A stale copy (the row changed since it was read) is not overwritten.
      const stale = { ...first, envelope: await vaultA.encrypt(Buffer.from('other'), first) };
      expect(await store.keks.replaceEnvelope(stale, await rewrapEnvelope(stale.envelope, first, A, B))).toBe(
        false,
      );

      for (const ref of batch) {
        const moved = await rewrapEnvelope(ref.envelope, ref, A, B);
        expect(await store.keks.replaceEnvelope(ref, moved)).toBe(true);
      }
      expect(await store.keks.envelopeCounts()).toEqual(new Map([[vaultB.kekId, 3]]));
      expect(await store.keks.envelopesUnder(vaultA.kekId, 10)).toEqual([]);
      const stored = await store.keys.get(account.id, key.id);
      const plain = await vaultB.decrypt(stored?.ciphertext as Buffer, {
        keyId: key.id,
        accountId: account.id,
      });
      expect(plain.toString()).toBe('sk-1');
    });
  });
}
