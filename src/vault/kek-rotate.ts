import { setTimeout as sleep } from 'node:timers/promises';
import type { KekVersion, Store } from '../store/store.js';
import { sealCanary } from './kek-check.js';
import { KekChangedError, KekError } from './kek-error.js';
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
/**
 * How long an envelope read before it was rewrapped may still be opened: the proxy keeps a token's
 * record (with its envelope) for up to 1 s, and a request decrypts right after reading it.
 */
export const READ_GRACE_MS = 3000;

/**
 * The end of a rewrap (rotate and migrate): once SETTLE_MS have passed since the new version was
 * recorded, sweep until a sweep moves nothing and the last move is READ_GRACE_MS old, so no server
 * still writes, or holds a copy of an envelope, under the version about to be retired.
 */
export async function drain(
  sweep: () => Promise<void>,
  /** `lastMoveAt` is `performance.now()` at the last rewrap (monotonic: a clock step must not cut the grace). */
  moves: () => { moved: number; lastMoveAt: number },
  recordedAt: number,
): Promise<void> {
  const settle = recordedAt + SETTLE_MS - Date.now();
  if (settle > 0) await sleep(Math.min(settle, SETTLE_MS));
  for (;;) {
    const before = moves().moved;
    await sweep();
    const { moved, lastMoveAt } = moves();
    if (moved !== before) continue;
    const grace = lastMoveAt + READ_GRACE_MS - performance.now();
    if (grace <= 0) return;
    await sleep(grace);
  }
}

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
  if (target === undefined) {
    throw new KekChangedError(
      'the new KEK version vanished from the store while kek rotate recorded it (another process changed the KEK versions); run kek rotate again',
    );
  }
  await keyring.refresh();
  const to = keyring.kekFor(target.id);
  if (to === undefined) {
    throw new KekError('kek', `KEK ${target.id} is recorded in the store but its key cannot be loaded here.`);
  }

  let moved = 0;
  let lastMoveAt = Number.NEGATIVE_INFINITY;
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
      const n = await rewrapAll(store, source.id, from, to, options, () => moved);
      if (n > 0) lastMoveAt = performance.now();
      moved += n;
    }
    return sources.map((v) => v.id);
  };

  await sweep();
  // Servers that read the versions before step 2 may still seal under an old version for a moment,
  // and may still hold envelopes read before they were rewrapped.
  await drain(
    async () => {
      await sweep();
    },
    () => ({ moved, lastMoveAt }),
    Date.parse(target.createdAt),
  );
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
