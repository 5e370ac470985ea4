import { setTimeout as sleep } from 'node:timers/promises';
import type { KekVersion, Store } from '../store/store.js';
import { sealCanary } from './kek-check.js';
import { KekError } from './kek-error.js';
import { WRITE_VIEW_MAX_AGE_MS } from './keyring.js';
import { inheritMacKeys } from './mac-keys.js';
import type { OpenedKek } from './open-kek.js';
import { createEnvelopeVault, rewrapEnvelope, type KeyEncryptionKey } from './vault.js';

/**
 * `tokenproxy kek rotate` (DESIGN §8): a new KEK version, every envelope rewrapped under it in
 * batches while servers keep running, then the old version retired and destroyed. The state is the
 * store's kek_versions plus the provider's key material, and every step is idempotent:
 *
 *   1. the next version's key is made (master.next.key, or `<label>.next` in the HSM), once;
 *   2. it is recorded in kek_versions with its canary: from here on it is the newest live version,
 *      so running servers seal new envelopes under it (their view is never older than
 *      WRITE_VIEW_MAX_AGE_MS) and load it when they meet an envelope sealed under it;
 *   3. envelopes under the older live versions are rewrapped, each swapped only if unchanged;
 *   4. once SETTLE_MS have passed since step 2, a last sweep, then the old versions are retired
 *      (state: live → retired) and the database's dead copies purged;
 *   5. the old key is destroyed and the new one takes its place (master.key / the configured label).
 *
 * A run killed anywhere is finished by the next run: with two live versions it resumes towards the
 * newest; with a recorded next version it goes on from the step that did not finish.
 */

/** Longer than any server's view of the versions can be when it writes (three times, plus margin). */
export const SETTLE_MS = 3 * WRITE_VIEW_MAX_AGE_MS + 1000;

export interface RotateOptions {
  readonly batchSize: number;
  readonly now?: () => Date;
  /** Called after each batch with the envelopes moved so far. */
  readonly onBatch?: (moved: number) => void;
}

export interface RotateResult {
  readonly from: readonly string[];
  readonly to: string;
  readonly moved: number;
  /** True when this run finished a rotation an earlier run had started. */
  readonly resumed: boolean;
}

export async function rotateKek(
  store: Store,
  opened: OpenedKek,
  options: RotateOptions,
): Promise<RotateResult> {
  const { keyring, versions } = opened;
  const now = options.now ?? (() => new Date());
  const live = (await store.keks.list()).filter((v) => v.retiredAt === null);
  let target: KekVersion | undefined;
  let resumed = live.length > 1;
  if (resumed) {
    target = live.at(-1);
    if (target !== undefined && target.provider !== versions.provider) {
      throw new KekError(
        'kek',
        `an unfinished \`tokenproxy kek migrate\` left KEK ${target.id} (${target.provider}) beside this store's ` +
          `${versions.provider} KEK: run \`tokenproxy kek migrate\` again to finish it, then rotate.`,
      );
    }
  } else {
    const next = await versions.makeNext();
    const id = next.fingerprint.toString('hex');
    const current = live[0] === undefined ? undefined : keyring.kekFor(live[0].id);
    const nextVault = createEnvelopeVault(next);
    const recorded = await store.keks.add({
      id,
      provider: versions.provider,
      label: versions.label,
      canary: await sealCanary(nextVault),
      // Idempotency records made before the rotation must still match their retries.
      macKeys:
        current === undefined || current.fingerprint.equals(next.fingerprint)
          ? null
          : await inheritMacKeys(current, nextVault),
      createdAt: now().toISOString(),
    });
    resumed = !recorded;
    target = (await store.keks.list()).find((v) => v.id === id);
  }
  if (target === undefined)
    throw new Error('the new KEK version vanished from the store; run kek rotate again');
  await keyring.refresh();
  const to = keyring.kekFor(target.id);
  if (to === undefined) {
    throw new KekError('kek', `KEK ${target.id} is recorded in the store but its key cannot be loaded here.`);
  }

  let moved = 0;
  const sweep = async (): Promise<string[]> => {
    const sources = (await store.keks.list()).filter((v) => v.retiredAt === null && v.id !== target.id);
    for (const source of sources) {
      const from = keyring.kekFor(source.id);
      if (from === undefined) {
        throw new KekError(
          'kek',
          `KEK ${source.id} still wraps data keys but its key cannot be loaded here.`,
        );
      }
      moved += await rewrapAll(store, source.id, from, to, options, () => moved);
    }
    return sources.map((v) => v.id);
  };

  await sweep();
  // Servers that read the versions before step 2 may still seal under an old version for a moment.
  const wait = Date.parse(target.createdAt) + SETTLE_MS - now().getTime();
  if (wait > 0) await sleep(Math.min(wait, SETTLE_MS));
  const from = await sweep();
  const at = now().toISOString();
  for (const id of from) await store.keks.retire(id, at);
  await store.keks.purgeDead();
  const retired = (await store.keks.list())
    .filter((v) => v.retiredAt !== null && v.provider === versions.provider)
    .map((v) => v.id);
  await versions.promote(target.id, retired);
  await keyring.refresh();
  return { from, to: target.id, moved, resumed };
}

async function rewrapAll(
  store: Store,
  fromId: string,
  from: KeyEncryptionKey,
  to: KeyEncryptionKey,
  options: RotateOptions,
  total: () => number,
): Promise<number> {
  let moved = 0;
  for (;;) {
    const batch = await store.keks.envelopesUnder(fromId, options.batchSize);
    if (batch.length === 0) return moved;
    for (const ref of batch) {
      const rewrapped = await rewrapEnvelope(ref.envelope, ref, from, to);
      // False when the row changed meanwhile: the next batch sees it again if still under `from`.
      if (await store.keks.replaceEnvelope(ref, rewrapped)) moved++;
    }
    options.onBatch?.(total() + moved);
  }
}
