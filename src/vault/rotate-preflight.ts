import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { KekError } from './kek-error.js';
import { MASTER_KEY_ENV, MASTER_KEY_FILE } from './local-kek.js';

/**
 * What `kek rotate` refuses before it touches anything (DESIGN §8): a local KEK given as
 * TOKENPROXY_MASTER_KEY (a rotation cannot rewrite an environment variable), and a local store
 * without its master.key (a start would make a new key; a rotation must never). A KEK that is not
 * the store's is refused before either, as at any start (src/cli/kek.ts).
 */
export async function refuseRotation(
  config: Pick<Config, 'kek' | 'dataDir'>,
  env: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  if (config.kek !== 'local') return;
  const file = join(config.dataDir, MASTER_KEY_FILE);
  if (env[MASTER_KEY_ENV] !== undefined) {
    const exists = await stat(file).then(
      () => true,
      () => false,
    );
    // Never advise writing over a master.key: it may be the only copy of this store's key.
    const move = exists
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
  try {
    await stat(file);
  } catch {
    throw new KekError(
      `master.key (${file})`,
      `kek rotate found no ${file}: it rotates the master key of this data dir, and there is none to rotate. ` +
        `Check --data-dir. Nothing was changed.`,
    );
  }
}
