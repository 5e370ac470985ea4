import type { Logger } from 'pino';
import type { KekVersion, Store } from '../store/store.js';
import { KekChangedError, KekError } from './kek-error.js';
import { isVaultError, type KeyBinding, type Vault } from './vault.js';

/**
 * The start-time proof that the configured KEK belongs to this store (DESIGN §8), run before
 * anything can write under it. A store records each KEK version with a canary sealed under it;
 * opening the canary proves the KEK, and every live envelope must be under a KEK the vault holds.
 */

/** Where the configured KEK came from, for messages: the setting to fix and how. */
export interface KekSource {
  /** The setting as the user knows it: `TOKENPROXY_MASTER_KEY`, the master.key path, a pkcs11 setting. */
  readonly setting: string;
  /** One sentence saying what to do when the KEK is not this store's. */
  readonly fix: string;
  readonly provider: 'local' | 'pkcs11';
  /** Printable description of where the KEK lives (HSM token and label); null for `local`. */
  readonly label: string | null;
}

const CANARY = Buffer.from('tokenproxy KEK canary, version 1', 'utf8');

/** Binds a canary to its version, so one version's canary cannot stand in for another's. */
export function canaryBinding(kekId: string): KeyBinding {
  return { keyId: `kek:${kekId}`, accountId: 'tokenproxy' };
}

export function sealCanary(vault: Vault): Promise<Buffer> {
  return vault.encrypt(CANARY, canaryBinding(vault.kekId));
}

/** True when `vault` opens the canary of `version`. */
export async function opensCanary(
  vault: Vault,
  version: Pick<KekVersion, 'id' | 'canary'>,
): Promise<boolean> {
  try {
    const plaintext = await vault.decrypt(version.canary, canaryBinding(version.id));
    const ok = plaintext.equals(CANARY);
    plaintext.fill(0);
    return ok;
  } catch (err) {
    if (isVaultError(err)) return false;
    throw err;
  }
}

export interface VerifyOptions {
  readonly logger?: Logger | undefined;
  /**
   * KEK ids the caller holds besides `vault`'s (`kek migrate` holds the source and the target):
   * envelopes under them are not foreign.
   */
  readonly alsoHeld?: readonly string[];
  /** Accept a retired version (`kek migrate` run again after it finished: nothing left to do). */
  readonly allowRetired?: boolean;
  readonly now?: () => Date;
}

/**
 * Resolves when `vault` is the store's KEK (registering it on a store that has none recorded yet);
 * throws KekError naming `source.setting` otherwise. Writes nothing unless the KEK is proven.
 */
export async function verifyKek(
  store: Store,
  vault: Vault,
  source: KekSource,
  options: VerifyOptions = {},
): Promise<void> {
  const now = options.now ?? (() => new Date());
  for (let attempt = 0; ; attempt++) {
    const versions = await store.keks.list();
    const counts = await store.keks.envelopeCounts();
    const mine = versions.find((v) => v.id === vault.kekId);
    if (mine !== undefined) {
      await checkRecorded(vault, mine, versions, counts, source, options);
      options.logger?.info({ kek_id: vault.kekId, kek: source.provider }, 'KEK verified against the store');
      return;
    }
    const live = versions.filter((v) => v.retiredAt === null).map((v) => v.id);
    const foreign = [...counts.keys()].filter((id) => id !== vault.kekId && !options.alsoHeld?.includes(id));
    if (live.length > 0 || foreign.length > 0) {
      throw mismatch(vault, source, [...new Set([...live, ...foreign])], versions);
    }
    // A store with no KEK recorded: new, or made before versions were recorded. Its envelopes (if
    // any) all carry this KEK's id; one must open before the KEK is taken as the store's.
    if ((counts.get(vault.kekId) ?? 0) > 0) await proveOnSample(store, vault, source);
    const added = await store.keks.add(
      {
        id: vault.kekId,
        provider: source.provider,
        label: source.label,
        canary: await sealCanary(vault),
        createdAt: now().toISOString(),
      },
      { onlyIfNone: versions.length === 0 },
    );
    if (added) {
      options.logger?.info({ kek_id: vault.kekId, kek: source.provider }, 'KEK recorded in the store');
      return;
    }
    // Another process recorded a KEK between our read and our write: check against theirs.
    if (attempt > 0) {
      throw new KekChangedError(
        'the store’s KEK versions changed twice while starting (other processes recorded KEKs meanwhile); start again',
      );
    }
  }
}

async function checkRecorded(
  vault: Vault,
  mine: KekVersion,
  versions: readonly KekVersion[],
  counts: ReadonlyMap<string, number>,
  source: KekSource,
  options: VerifyOptions,
): Promise<void> {
  const alsoHeld = options.alsoHeld ?? [];
  if (mine.retiredAt !== null && options.allowRetired !== true) {
    const live = versions.filter((v) => v.retiredAt === null);
    const current = live.map((v) => v.id);
    // A master key retired by `kek migrate` is the right key of a store that moved: the fix is the
    // setting, not a backup.
    const migrated = mine.provider === 'local' && live.some((v) => v.provider === 'pkcs11');
    throw new KekError(
      source.setting,
      migrated
        ? `${source.setting} holds KEK ${vault.kekId}, which \`tokenproxy kek migrate\` retired at ${mine.retiredAt} when it ` +
            `moved the store to the HSM KEK ${current.join(', ')}. ${TO_HSM} Nothing was written.`
        : `${source.setting} holds KEK ${vault.kekId}, which \`tokenproxy kek rotate\` retired at ${mine.retiredAt}; ` +
            `the store is now under KEK ${current.join(', ') || '(none)'}. ${source.fix} Nothing was written.`,
    );
  }
  if (!(await opensCanary(vault, mine))) {
    throw new KekError(
      source.setting,
      `${source.setting} holds a KEK whose id is ${vault.kekId} but which does not open that KEK's record in the store ` +
        `(the record was altered, or the KEK differs). ${source.fix} Nothing was written.`,
    );
  }
  const foreign = [...counts.keys()].filter((id) => id !== vault.kekId && !alsoHeld.includes(id));
  if (foreign.length > 0) throw mismatch(vault, source, foreign, versions);
}

/** What a local start on a store (partly) under an HSM KEK needs: the pkcs11 settings, not a backup. */
const TO_HSM =
  'Start with kek "pkcs11" and the pkcs11_* settings (module, token label, PIN, key label); while a ' +
  '`kek migrate` is still moving keys, kek "local" with the pkcs11_* settings serves both.';

async function proveOnSample(store: Store, vault: Vault, source: KekSource): Promise<void> {
  const sample = await store.keks.sampleEnvelope(vault.kekId);
  if (sample === undefined) return;
  try {
    (await vault.decrypt(sample.envelope, { keyId: sample.keyId, accountId: sample.accountId })).fill(0);
  } catch (err) {
    if (!isVaultError(err)) throw err;
    throw new KekError(
      source.setting,
      `${source.setting} holds KEK ${vault.kekId}, but it does not open the stored ${sample.table} ${sample.keyId} ` +
        `that carries that KEK id (${err.code}). ${source.fix} Nothing was written.`,
      { cause: err },
    );
  }
}

function mismatch(
  vault: Vault,
  source: KekSource,
  storeKeks: readonly string[],
  versions: readonly KekVersion[],
): KekError {
  const underHsm =
    source.provider === 'local' && versions.some((v) => storeKeks.includes(v.id) && v.provider === 'pkcs11');
  return new KekError(
    source.setting,
    `KEK mismatch: ${source.setting} holds KEK ${vault.kekId}, but this store's data keys are wrapped under ` +
      `${underHsm ? 'the HSM ' : ''}KEK ${storeKeks.join(', ')}. ${underHsm ? TO_HSM : source.fix} Nothing was written.`,
  );
}
