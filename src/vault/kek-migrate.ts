import type { Store } from '../store/store.js';
import { sealCanary } from './kek-check.js';
import { drain } from './kek-rotate.js';
import { inheritMacKeys } from './mac-keys.js';
import { rewrapEnvelope, type KeyEncryptionKey, type Vault } from './vault.js';

/**
 * Moves every envelope of a store from one KEK to another (`tokenproxy kek migrate`, DESIGN §8):
 * record the target version (with its canary), rewrap envelopes in batches, then retire the source
 * version. Every step is idempotent and each envelope is swapped in a statement of its own, only if
 * unchanged, so a run killed at any point is finished by running it again.
 */

export interface KekHandle {
  readonly kek: KeyEncryptionKey;
  readonly vault: Vault;
  readonly provider: 'local' | 'pkcs11';
  readonly label: string | null;
}

export interface MigrateOptions {
  readonly batchSize: number;
  readonly now?: () => Date;
  /** Called after each batch with the envelopes moved so far. */
  readonly onBatch?: (moved: number) => void;
}

export async function migrateEnvelopes(
  store: Store,
  from: KekHandle,
  to: KekHandle,
  options: MigrateOptions,
): Promise<{ moved: number }> {
  const now = options.now ?? (() => new Date());
  const versions = await store.keks.list();
  if (!versions.some((v) => v.id === to.vault.kekId)) {
    await store.keks.add({
      id: to.vault.kekId,
      provider: to.provider,
      label: to.label,
      canary: await sealCanary(to.vault),
      // Idempotency records made before the migration must still match their retries.
      macKeys: await inheritMacKeys(from.kek, to.vault),
      createdAt: now().toISOString(),
    });
  }
  let moved = 0;
  let lastMoveAt = Number.NEGATIVE_INFINITY;
  const sweep = async (): Promise<void> => {
    for (;;) {
      const batch = await store.keks.envelopesUnder(from.vault.kekId, options.batchSize);
      if (batch.length === 0) return;
      for (const ref of batch) {
        const rewrapped = await rewrapEnvelope(ref.envelope, ref, from.kek, to.kek);
        // False when the row changed meanwhile: the next batch sees it again if still under `from`.
        if (await store.keks.replaceEnvelope(ref, rewrapped)) {
          moved++;
          lastMoveAt = performance.now();
        }
      }
      options.onBatch?.(moved);
    }
  };
  await sweep();
  // Servers running beside the migration (with the pkcs11 settings) may still seal under the local
  // version for a moment, or hold envelopes read before they moved: wait that out, like kek rotate.
  const target = (await store.keks.list()).find((v) => v.id === to.vault.kekId);
  await drain(sweep, () => ({ moved, lastMoveAt }), target === undefined ? 0 : Date.parse(target.createdAt));
  await store.keks.retire(from.vault.kekId, now().toISOString());
  await store.keks.purgeDead();
  return { moved };
}
