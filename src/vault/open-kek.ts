import { rmdir, unlink } from 'node:fs/promises';
import { pathExists } from '../server/data-dir.js';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import type { Store } from '../store/store.js';
import { opensCanary, verifyKek, type KekSource } from './kek-check.js';
import type { KekHandle } from './kek-migrate.js';
import { KekError } from './kek-error.js';
import {
  MASTER_KEY_ENV,
  MASTER_KEY_FILE,
  createLocalKek,
  loadLocalKek,
  masterKeyFileSetting,
} from './local-kek.js';
import { openPkcs11Kek, type Pkcs11Kek } from './pkcs11-kek.js';
import { createKeyring, type KekLoader, type Keyring } from './keyring.js';
import { localVersions, pkcs11Versions, type KekVersionStore } from './kek-versions.js';
import { createEnvelopeVault } from './vault.js';
import { withBootstrapLock } from '../cluster/serve-lock.js';

/**
 * The one way every command gets its vault (serve, `accounts create`, `kek …`): load the
 * configured KEK, prove it against the store (src/vault/kek-check.ts), and only then hand it out,
 * so nothing is ever written under a KEK that cannot open the rest. Throws KekError (exit 2)
 * naming the setting when the KEK is not this store's.
 */
export async function openKek(
  config: Pick<Config, 'kek' | 'dataDir' | 'pkcs11' | 'database'>,
  env: Readonly<Record<string, string | undefined>>,
  store: Store,
  logger?: Logger,
): Promise<Keyring> {
  return (await openKekVersions(config, env, store, logger)).keyring;
}

/** What `kek rotate` needs besides the keyring: where the provider keeps its versions. */
export interface OpenedKek {
  readonly keyring: Keyring;
  readonly versions: KekVersionStore;
}

export async function openKekVersions(
  config: Pick<Config, 'kek' | 'dataDir' | 'pkcs11' | 'database'>,
  env: Readonly<Record<string, string | undefined>>,
  store: Store,
  logger?: Logger,
): Promise<OpenedKek> {
  return config.kek === 'pkcs11'
    ? openPkcs11(config, store, logger)
    : (await openLocal(config, env, store, logger, [])).opened;
}

/**
 * For `tokenproxy kek migrate --to pkcs11`: the store's local KEK (proven, with the HSM's envelopes
 * of an earlier, interrupted run allowed) and the HSM KEK (created when no key has the label, and
 * proven by its canary when a run already recorded it).
 */
export async function openMigration(
  config: Pick<Config, 'dataDir' | 'pkcs11'>,
  env: Readonly<Record<string, string | undefined>>,
  store: Store,
  logger?: Logger,
): Promise<{ from: KekHandle; to: KekHandle }> {
  const settings = config.pkcs11;
  if (settings === undefined) {
    throw new KekError(
      'pkcs11_module',
      'kek migrate --to pkcs11 needs pkcs11_module, pkcs11_token_label and pkcs11_pin.',
    );
  }
  // The local key first, so a wrong one is refused before anything is created in the HSM. An earlier,
  // interrupted run's HSM version may hold envelopes already. Without the pkcs11 settings: the HSM is
  // opened here next, and one library per process.
  const hsmVersions = (await store.keks.list()).filter((v) => v.provider === 'pkcs11');
  const { handle, opened } = await openLocal(
    { dataDir: config.dataDir, pkcs11: undefined },
    env,
    store,
    logger,
    hsmVersions.map((v) => v.id),
  );
  await opened.keyring.close();
  // The keyring's KEK of the version carries the MAC keys it inherited, which the HSM's inherits in turn.
  const from = { ...handle, kek: opened.keyring.kekFor(handle.vault.kekId) ?? handle.kek };
  // An earlier run with other pkcs11 settings moved keys under another HSM key: finishing under this
  // one would leave the store split between two. Checked before anything is created in the HSM.
  const label = `${settings.keyLabel} on token ${settings.tokenLabel}`;
  const counts = await store.keks.envelopeCounts();
  const elsewhere = hsmVersions.filter((v) => v.label !== label && (counts.get(v.id) ?? 0) > 0);
  if (elsewhere.length > 0) {
    throw new KekError(
      'pkcs11_key_label',
      `Setting "pkcs11_key_label": keys of this store are already under the HSM KEK ` +
        `${elsewhere.map((v) => `${v.id} (${v.label ?? 'no label'})`).join(', ')}, moved there by an earlier ` +
        '`kek migrate` with other pkcs11 settings: run it again with those settings to finish. Nothing was written.',
    );
  }
  const kek = await openPkcs11Kek({ ...settings, create: true });
  const vault = createEnvelopeVault(kek);
  try {
    const recorded = hsmVersions.find((v) => v.id === vault.kekId);
    if (recorded === undefined && !kek.created && kek.madeByTokenproxy)
      throw foreignHsmKey(settings, 'this store');
    if (recorded !== undefined && !(await opensCanary(vault, recorded))) {
      throw new KekError('pkcs11_key_label', `the HSM key "${label}" does not open its record in the store.`);
    }
    return { from, to: { kek, vault, provider: 'pkcs11', label } };
  } catch (err) {
    await vault.close();
    throw err;
  }
}

async function openLocal(
  config: Pick<Config, 'dataDir' | 'pkcs11'>,
  env: Readonly<Record<string, string | undefined>>,
  store: Store,
  logger: Logger | undefined,
  alsoHeld: readonly string[],
): Promise<{ handle: KekHandle; opened: OpenedKek }> {
  const envValue = env[MASTER_KEY_ENV];
  const path = join(config.dataDir, MASTER_KEY_FILE);
  const fileExisted = envValue === undefined && (await pathExists(path));
  const dirExisted = await pathExists(config.dataDir);
  const kek = await loadLocalKek({ dataDir: config.dataDir, envValue });
  const localKek = createLocalKek(kek);
  const vault = createEnvelopeVault(localKek);
  kek.fill(0);
  const versions = localVersions(config.dataDir);
  const hsm = config.pkcs11 === undefined ? undefined : lazyHsm(config.pkcs11);
  const keyring = createKeyring({
    keks: store.keks,
    primary: localKek,
    loaders: hsm === undefined ? [versions] : [versions, hsm],
    closers: hsm === undefined ? [] : [() => hsm.close()],
    logger,
  });
  const source: KekSource =
    envValue !== undefined
      ? {
          setting: MASTER_KEY_ENV,
          fix: `Set ${MASTER_KEY_ENV} to the master key this store was created with (or unset it to use ${path}).`,
          provider: 'local',
          label: null,
        }
      : {
          setting: masterKeyFileSetting(path),
          fix: fileExisted
            ? `Put back the master.key this store was created with (from backup), or give that key as ${MASTER_KEY_ENV}.`
            : `No master.key was found in ${config.dataDir}: copy the one this store was created with there, or give it as ${MASTER_KEY_ENV}.`,
          provider: 'local',
          label: null,
        };
  try {
    // Versions a rotation in progress made (master.next.key) are held too: their envelopes are not foreign.
    await keyring.refresh();
    const held = [...alsoHeld, ...keyring.heldIds().filter((id) => id !== vault.kekId)];
    await verifyKek(store, vault, source, { logger, alsoHeld: held, allowRetired: held.length > 0 });
    await keyring.refresh();
  } catch (err) {
    await keyring.close();
    // A key generated by this very start for a store that already has one is of no use to anyone,
    // and left behind it would make the next start's message about a key the user never had.
    if (err instanceof KekError && envValue === undefined && !fileExisted) {
      await unlink(path).catch(() => undefined);
      // And the data dir made for it (a mistyped --data-dir): rmdir leaves a directory that has files.
      if (!dirExisted) await rmdir(config.dataDir).catch(() => undefined);
    }
    throw err;
  }
  return { handle: { kek: localKek, vault, provider: 'local', label: null }, opened: { keyring, versions } };
}

async function openPkcs11(
  config: Pick<Config, 'pkcs11' | 'dataDir' | 'database'>,
  store: Store,
  logger: Logger | undefined,
): Promise<OpenedKek> {
  const settings = config.pkcs11;
  if (settings === undefined)
    throw new KekError('kek', 'Setting "kek" is "pkcs11" but no pkcs11 settings were given.');
  const isFresh = async () =>
    (await store.keks.list()).length === 0 && (await store.keks.envelopeCounts()).size === 0;
  // A store with a KEK recorded opens it; a new one creates its own, under the lock that makes
  // processes starting together on it agree: the first creates the key and records it, the others
  // then find it recorded.
  if (!(await isFresh())) return openPkcs11Keyring(settings, store, logger, false);
  return withBootstrapLock(config, async () => openPkcs11Keyring(settings, store, logger, await isFresh()));
}

async function openPkcs11Keyring(
  settings: NonNullable<Config['pkcs11']>,
  store: Store,
  logger: Logger | undefined,
  fresh: boolean,
): Promise<OpenedKek> {
  // A KEK is created in the HSM only for a store that has none yet: a wrong label on a store in use
  // must be refused, not answered with a fresh, empty key.
  const kek = await openPkcs11Kek({
    module: settings.module,
    tokenLabel: settings.tokenLabel,
    pin: settings.pin,
    keyLabel: settings.keyLabel,
    create: fresh,
  });
  if (fresh && !kek.created && kek.madeByTokenproxy) {
    await kek.close();
    throw foreignHsmKey(settings, 'this new store');
  }
  const vault = createEnvelopeVault(kek);
  const label = `${settings.keyLabel} on token ${settings.tokenLabel}`;
  const versions = pkcs11Versions(kek, label);
  const keyring = createKeyring({
    keks: store.keks,
    primary: kek,
    loaders: [versions],
    closers: [() => kek.close()],
    logger,
  });
  try {
    await keyring.refresh();
    const held = keyring.heldIds().filter((id) => id !== vault.kekId);
    await verifyKek(
      store,
      vault,
      {
        setting: `pkcs11_token_label / pkcs11_key_label (the key "${label}")`,
        fix: 'Point pkcs11_token_label and pkcs11_key_label at the HSM key this store was created with.',
        provider: 'pkcs11',
        label,
      },
      { logger, alsoHeld: held, allowRetired: held.length > 0 },
    );
    await keyring.refresh();
  } catch (err) {
    await keyring.close();
    throw err;
  }
  if (kek.created) logger?.info({ kek_id: vault.kekId, label }, 'KEK created in the HSM');
  return { keyring, versions };
}

/**
 * The HSM of a local store's pkcs11 settings, opened only when the store names a version the data
 * dir does not have: the version a `kek migrate --to pkcs11` beside a running server makes.
 */
/**
 * A store never takes over an HSM key another tokenproxy store created: a `kek rotate` of either
 * would destroy it under the other, whose provider keys would then be lost. (A key the HSM's own
 * tools made, unmarked, is taken over: that is how an operator provides one.)
 */
function foreignHsmKey(settings: NonNullable<Config['pkcs11']>, whose: string): KekError {
  return new KekError(
    'pkcs11_key_label',
    `Setting "pkcs11_key_label": the token "${settings.tokenLabel}" already holds a key labelled ` +
      `"${settings.keyLabel}" (or "${settings.keyLabel}.next") that another tokenproxy store created, not ${whose}: ` +
      `that store uses it, or one that is gone. Each store needs a key of its own (a rotation of one would destroy the ` +
      `other's): give this store another pkcs11_key_label (TOKENPROXY_PKCS11_KEY_LABEL), or delete that ` +
      `key from the token if no store uses it (an earlier \`kek migrate\` that stopped before recording ` +
      `its key left one that holds nothing yet). Nothing was written.`,
  );
}

function lazyHsm(settings: NonNullable<Config['pkcs11']>): KekLoader & { close(): Promise<void> } {
  let opening: Promise<Pkcs11Kek> | undefined;
  return {
    provider: 'pkcs11',
    async load(kekId) {
      opening ??= openPkcs11Kek({ ...settings, create: false });
      let hsm: Pkcs11Kek;
      try {
        hsm = await opening;
      } catch (err) {
        opening = undefined;
        throw err;
      }
      return hsm.fingerprint.toString('hex') === kekId ? hsm : hsm.load(kekId);
    },
    async close() {
      const open = opening;
      opening = undefined;
      if (open !== undefined) await (await open.catch(() => undefined))?.close();
    },
  };
}
