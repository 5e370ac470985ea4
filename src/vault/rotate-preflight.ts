import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { noStoreIn, pathExists, sqliteStoreIn } from '../server/data-dir.js';
import type { Store } from '../store/store.js';
import { KekError } from './kek-error.js';
import { MASTER_KEY_ENV, MASTER_KEY_FILE } from './local-kek.js';
import { openKekVersions } from './open-kek.js';

/**
 * What `kek rotate` refuses before it opens the store (DESIGN §8): a SQLite data dir with no store
 * (a mistyped --data-dir, where opening would create one), and a local store without its master.key
 * (a start would make a new key; a rotation must never). With TOKENPROXY_MASTER_KEY set the file is
 * not read: `refuseEnvironmentKey` answers, once the key is proven against the store.
 */
export async function refuseBeforeStore(
  config: Pick<Config, 'kek' | 'dataDir' | 'database'>,
  env: Readonly<Record<string, string | undefined>>,
  command: 'kek rotate' | 'kek migrate' = 'kek rotate',
): Promise<void> {
  if (config.database === undefined && !(await sqliteStoreIn(config.dataDir))) {
    throw new KekError('data_dir', `${command} found ${noStoreIn(config.dataDir)}. Nothing was changed.`);
  }
  // The master key is what rotate replaces, and what migrate moves the store away from.
  const local = command === 'kek migrate' || config.kek === 'local';
  if (!local || env[MASTER_KEY_ENV] !== undefined) return;
  const file = join(config.dataDir, MASTER_KEY_FILE);
  if (!(await pathExists(file))) {
    const does =
      command === 'kek rotate'
        ? 'it rotates the master key of this data dir, and there is none to rotate'
        : 'it moves this data dir from its master key to the HSM, and there is none to move from';
    throw new KekError(
      `master.key (${file})`,
      `${command} found no ${file}: ${does}. Check --data-dir (or give the key as ${MASTER_KEY_ENV}). Nothing was changed.`,
    );
  }
}

/**
 * A local KEK given as TOKENPROXY_MASTER_KEY cannot be rotated: a rotation cannot rewrite an
 * environment variable. The key is proven against the store first (a KEK mismatch, as at any
 * start), so the advice to move it into master.key is never given for a wrong key; a store with no
 * KEK yet has nothing to prove it against.
 */
export async function refuseEnvironmentKey(
  config: Pick<Config, 'kek' | 'dataDir' | 'pkcs11' | 'database'>,
  env: Readonly<Record<string, string | undefined>>,
  store: Store,
): Promise<void> {
  if (config.kek !== 'local' || env[MASTER_KEY_ENV] === undefined) return;
  if ((await store.keks.list()).length > 0) await (await openKekVersions(config, env, store)).keyring.close();
  const file = join(config.dataDir, MASTER_KEY_FILE);
  // Never advise writing over a master.key: it may be the only copy of this store's key.
  const move = (await pathExists(file))
    ? `${file} exists: if it holds the same key, unset ${MASTER_KEY_ENV} for tokenproxy and run kek rotate ` +
      `with the file; never write over it, it may be the only copy of a key`
    : `Move the key into a file first: write its value to ${file} (\`umask 077; set -C; printf '%s\\n' "$${MASTER_KEY_ENV}" > ${file}\`, ` +
      `which refuses to replace a file), unset ${MASTER_KEY_ENV} for tokenproxy and restart the server, then run kek rotate`;
  throw new KekError(
    MASTER_KEY_ENV,
    `kek rotate cannot rotate a master key given as ${MASTER_KEY_ENV}: it would have to rewrite the variable. ` +
      `${move}; or move the store into an HSM with \`tokenproxy kek migrate --to pkcs11\`. Nothing was changed.`,
  );
}
