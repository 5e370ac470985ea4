import { constants } from 'node:fs';
import { access, chmod, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../config/config-error.js';

/**
 * The data dir holds the master key, the SQLite store and the TLS key: only its owner may read it.
 * Files tokenproxy made with looser modes (older versions, a umask of 022, a directory made by hand)
 * are tightened rather than refused, so an upgrade never stops on its own old files; each change is
 * reported so the operator knows it happened.
 */

export const DATA_DIR_MODE = 0o700;
export const DATA_FILE_MODE = 0o600;
/** The SQLite store and the files SQLite keeps beside it (they hold the same rows). */
export const STORE_FILES = ['tokenproxy.db', 'tokenproxy.db-wal', 'tokenproxy.db-shm'] as const;

/** Whether `path` exists; a path that cannot be looked at counts as missing (callers say what they expected). */
export function pathExists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * Whether `dataDir` holds a SQLite store. Opening one creates it, so the commands that must not start
 * a store (all but `serve` and `accounts create`) ask first, and refuse with `noStoreIn`'s words.
 */
export function sqliteStoreIn(dataDir: string): Promise<boolean> {
  return pathExists(join(dataDir, STORE_FILES[0]));
}

/** What such a refusal says: where no store was found, and what to check. */
export function noStoreIn(dataDir: string): string {
  return `no tokenproxy store in ${dataDir} (no ${STORE_FILES[0]}): check --data-dir (or --database)`;
}

export interface PermissionFix {
  readonly path: string;
  readonly from: number;
  readonly to: number;
}

/** Creates the data dir (0700) or tightens it and its store files; fails naming `data_dir` when it cannot. */
export async function prepareDataDir(
  dataDir: string,
  options: { sqlite: boolean },
): Promise<PermissionFix[]> {
  try {
    await mkdir(dataDir, { recursive: true, mode: DATA_DIR_MODE });
    const info = await stat(dataDir);
    if (!info.isDirectory()) throw new ConfigError(notUsable(dataDir, 'it is not a directory'));
    await access(dataDir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(notUsable(dataDir, describeFsError(error)));
  }

  const fixes: PermissionFix[] = [];
  await tighten(dataDir, DATA_DIR_MODE, fixes);
  if (options.sqlite) {
    for (const name of STORE_FILES) await tighten(join(dataDir, name), DATA_FILE_MODE, fixes);
  }
  return fixes;
}

async function tighten(path: string, mode: number, fixes: PermissionFix[]): Promise<void> {
  // Windows has no group/other mode bits to speak of.
  if (process.platform === 'win32') return;
  let current: number;
  try {
    current = (await stat(path)).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new ConfigError(notUsable(path, describeFsError(error)));
  }
  if ((current & ~mode) === 0) return;
  try {
    await chmod(path, current & mode);
  } catch (error) {
    throw new ConfigError(
      `setting data_dir: ${path} has mode ${octal(current)}, which lets other users read it, and tokenproxy ` +
        `could not change it (${describeFsError(error)}): run \`chmod ${octal(current & mode)} ${path}\` as its owner`,
    );
  }
  fixes.push({ path, from: current, to: current & mode });
}

function notUsable(path: string, why: string): string {
  return (
    `setting data_dir: ${path} cannot be used (${why}). Choose a directory this user can write ` +
    `with --data-dir or TOKENPROXY_DATA_DIR, or fix its owner and permissions.`
  );
}

export function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOENT':
      return 'no such file or directory';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    case 'EROFS':
      return 'read-only file system';
    case 'ENOSPC':
      return 'no space left on the device';
    default:
      return code ?? (error instanceof Error ? error.message : String(error));
  }
}

export function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}
