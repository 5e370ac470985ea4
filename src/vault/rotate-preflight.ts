import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { KekError } from './kek-error.js';
import { MASTER_KEY_ENV, MASTER_KEY_FILE } from './local-kek.js';

/**
 * What `kek rotate` refuses before it touches anything (DESIGN §8): a local KEK given as
 * TOKENPROXY_MASTER_KEY (a rotation cannot rewrite an environment variable), and a local store
 * without its master.key (a start would make a new key; a rotation must never).
 */
export async function refuseRotation(
  config: Pick<Config, 'kek' | 'dataDir'>,
  env: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  if (config.kek !== 'local') return;
  const file = join(config.dataDir, MASTER_KEY_FILE);
  if (env[MASTER_KEY_ENV] !== undefined) {
    throw new KekError(
      MASTER_KEY_ENV,
      `kek rotate cannot rotate a master key given as ${MASTER_KEY_ENV}: it would have to rewrite the variable. ` +
        `Move the key into a file first: write its value to ${file} (\`umask 077; printf '%s\\n' "$${MASTER_KEY_ENV}" > ${file}\`), ` +
        `unset ${MASTER_KEY_ENV} for tokenproxy and restart the server, then run kek rotate; ` +
        `or move the store into an HSM with \`tokenproxy kek migrate --to pkcs11\`. Nothing was changed.`,
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
