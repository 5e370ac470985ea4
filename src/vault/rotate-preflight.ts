import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { KekError } from './kek-error.js';
import { MASTER_KEY_ENV, MASTER_KEY_FILE } from './local-kek.js';
import { STORE_FILES } from '../server/data-dir.js';

/**
 * What `kek rotate` refuses before it opens the store (DESIGN §8): a SQLite data dir with no store
 * (a mistyped --data-dir, where opening would create one), and a local store without its master.key
 * (a start would make a new key; a rotation must never). With TOKENPROXY_MASTER_KEY set the file is
 * not read: `refuseEnvironmentKey` answers, once the key is proven against the store.
 */
export async function refuseBeforeStore(
  config: Pick<Config, 'kek' | 'dataDir' | 'database'>,
  env: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  if (config.database === undefined && !(await exists(join(config.dataDir, STORE_FILES[0])))) {
    throw new KekError(
      'data_dir',
      `kek rotate found no tokenproxy store in ${config.dataDir} (no ${STORE_FILES[0]}): check --data-dir ` +
        `(or --database). Nothing was changed.`,
    );
  }
  if (config.kek !== 'local' || env[MASTER_KEY_ENV] !== undefined) return;
  const file = join(config.dataDir, MASTER_KEY_FILE);
  if (!(await exists(file))) {
    throw new KekError(
      `master.key (${file})`,
      `kek rotate found no ${file}: it rotates the master key of this data dir, and there is none to rotate. ` +
        `Check --data-dir. Nothing was changed.`,
    );
  }
}

/**
 * A local KEK given as TOKENPROXY_MASTER_KEY cannot be rotated: a rotation cannot rewrite an
 * environment variable. Asked after the key was proven against the store (src/cli/kek.ts), so the
 * advice to move it into master.key is never given for a wrong key.
 */
export async function refuseEnvironmentKey(
  config: Pick<Config, 'kek' | 'dataDir'>,
  env: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  if (config.kek !== 'local' || env[MASTER_KEY_ENV] === undefined) return;
  const file = join(config.dataDir, MASTER_KEY_FILE);
  // Never advise writing over a master.key: it may be the only copy of this store's key.
  const move = (await exists(file))
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

function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
