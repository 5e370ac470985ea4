import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { KekChangedError, KekError } from './kek-error.js';
import {
  createLocalKek,
  createKeyFile,
  MASTER_KEY_FILE,
  MASTER_KEY_NEXT_FILE,
  masterKeyFileSetting,
  readKeyFile,
} from './local-kek.js';
import type { KekLoader } from './keyring.js';
import type { Pkcs11Kek } from './pkcs11-kek.js';
import type { KeyEncryptionKey } from './vault.js';

/**
 * Where each KEK provider keeps its versions, for the keyring (loading a version another process
 * made) and for `kek rotate` (making the next version, and promoting it when the old one is gone).
 *
 * local: `master.key` is the version a start uses; `kek rotate` writes `master.next.key` beside it
 * and, once nothing uses the old version, renames it onto `master.key` (which destroys the old key).
 * pkcs11: the key labelled `pkcs11_key_label`; the next version is labelled `<label>.next` until the
 * old object is destroyed, and then takes the label.
 */
export interface KekVersionStore extends KekLoader {
  /** Printable description of where versions live (for kek_versions.label and messages). */
  readonly label: string | null;
  /** The next version's KEK: the one a rotation that stopped early made, or a new one. */
  makeNext(): Promise<KeyEncryptionKey>;
  /** Destroys the retired versions and makes `next` the version a start finds. Idempotent. */
  promote(next: string, retired: readonly string[]): Promise<void>;
}

export function localVersions(dataDir: string): KekVersionStore {
  const current = join(dataDir, MASTER_KEY_FILE);
  const nextPath = join(dataDir, MASTER_KEY_NEXT_FILE);
  const fromFile = async (path: string): Promise<KeyEncryptionKey | undefined> => {
    const key = await readKeyFile(path);
    if (key === undefined) return undefined;
    try {
      return createLocalKek(key);
    } finally {
      key.fill(0);
    }
  };
  return {
    provider: 'local',
    label: null,
    async load(kekId) {
      for (const path of [current, nextPath]) {
        const kek = await fromFile(path);
        if (kek?.fingerprint.toString('hex') === kekId) return kek;
      }
      return undefined;
    },
    async makeNext() {
      const made = await createKeyFile(nextPath);
      if (made !== undefined) {
        try {
          return createLocalKek(made);
        } finally {
          made.fill(0);
        }
      }
      // Another rotation made it between our look and our create: use theirs.
      const theirs = await fromFile(nextPath);
      if (theirs === undefined) {
        throw new KekChangedError(
          `${nextPath} appeared and vanished while kek rotate made it (another process removed it); run kek rotate again`,
        );
      }
      return theirs;
    },
    async promote(next) {
      const staged = await fromFile(nextPath);
      if (staged?.fingerprint.toString('hex') === next) {
        // rename() replaces master.key in one step: a start sees the old key or the new, never neither.
        await rename(nextPath, current);
        return;
      }
      const active = await fromFile(current);
      if (active?.fingerprint.toString('hex') !== next) {
        // The store's keys are under `next` now: without its key they cannot be opened. A bad key
        // file, as the user fixes it (exit 2), not a failure of the rotation.
        throw new KekError(
          masterKeyFileSetting(current),
          `neither ${current} nor ${nextPath} holds KEK ${next}, which the store's keys are now wrapped under: ` +
            `restore the file that holds it (from backup, or from where it was moved) as ${current}, then run kek rotate again`,
        );
      }
    },
  };
}

export function pkcs11Versions(hsm: Pkcs11Kek, label: string): KekVersionStore {
  return {
    provider: 'pkcs11',
    label,
    load: (kekId) => hsm.load(kekId),
    makeNext: () => hsm.generateNext(),
    async promote(nextId, retired) {
      for (const id of retired) {
        await hsm.load(id);
        await hsm.destroy(id);
      }
      await hsm.promote(nextId);
    },
  };
}
