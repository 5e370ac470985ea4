import { createSecretKey, hkdfSync, randomBytes } from 'node:crypto';
import { link, mkdir, open, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KekChangedError, KekError } from './kek-error.js';
import {
  createEnvelopeVault,
  gcmUnwrap,
  gcmWrap,
  kekFingerprint,
  type KeyEncryptionKey,
  type Vault,
} from './vault.js';

/**
 * The `local` KEK provider (DESIGN §2, §8): a 32-byte key from `TOKENPROXY_MASTER_KEY`, or else from
 * `<data-dir>/master.key`, generated on first start. Errors name the source and the fix, never the
 * key or the file's content.
 */

export const MASTER_KEY_ENV = 'TOKENPROXY_MASTER_KEY';
export const MASTER_KEY_FILE = 'master.key';
/** The next KEK version while `kek rotate` runs; renamed onto master.key when the rotation ends. */
export const MASTER_KEY_NEXT_FILE = 'master.next.key';
const KEK_LENGTH = 32;
const ACCEPTED = 'base64 (standard or url-safe, padding optional) of exactly 32 random bytes';
const HOW_TO_MAKE = 'e.g. the output of `openssl rand -base64 32`';

/**
 * The `setting` of a KekError about the master key file: the file is the setting a user fixes, named
 * as kek-check.ts's messages name it.
 */
export function masterKeyFileSetting(path: string): string {
  return `master.key (${path})`;
}

/** A bad master key file: a KekError naming the file (exit 2). */
function fileError(path: string, message: string, options?: { cause?: unknown }): KekError {
  return new KekError(masterKeyFileSetting(path), message, options);
}

/** Strict: Buffer.from(…, 'base64') skips characters it does not know, which would hide typos. */
function decodeKey(text: string): Buffer | undefined {
  const value = text.trim();
  const standard = /^[A-Za-z0-9+/]+={0,2}$/.test(value);
  const urlSafe = /^[A-Za-z0-9_-]+={0,2}$/.test(value);
  if (!standard && !urlSafe) return undefined;
  const bytes = Buffer.from(value, standard ? 'base64' : 'base64url');
  const unpadded = value.replace(/=+$/, '');
  const canonical = bytes.toString(standard ? 'base64' : 'base64url').replace(/=+$/, '');
  if (bytes.length !== KEK_LENGTH || unpadded !== canonical) {
    bytes.fill(0);
    return undefined;
  }
  return bytes;
}

export interface LoadLocalKekOptions {
  readonly dataDir: string;
  /** The content of `TOKENPROXY_MASTER_KEY`, when set; it wins over the file. */
  readonly envValue?: string | undefined;
}

/**
 * Refuses a `TOKENPROXY_MASTER_KEY` that is not a key at all, before a start opens (and creates) the
 * store; whether it is this store's key is checked once the store is open.
 */
export function checkMasterKeyForm(envValue: string | undefined): void {
  if (envValue === undefined) return;
  const key = decodeKey(envValue);
  if (key === undefined) throw invalidEnvKey();
  key.fill(0);
}

function invalidEnvKey(): KekError {
  return new KekError(
    MASTER_KEY_ENV,
    `${MASTER_KEY_ENV} is not valid: it must be ${ACCEPTED}, ${HOW_TO_MAKE}`,
  );
}

export async function loadLocalKek(options: LoadLocalKekOptions): Promise<Buffer> {
  if (options.envValue !== undefined) {
    const key = decodeKey(options.envValue);
    if (key === undefined) throw invalidEnvKey();
    return key;
  }

  const path = join(options.dataDir, MASTER_KEY_FILE);
  const existing = await readKeyFile(path);
  if (existing !== undefined) return existing;

  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  const created = await createKeyFile(path);
  if (created !== undefined) return created;
  // Another start created it between our read and our create: use theirs.
  const theirs = await readKeyFile(path);
  if (theirs === undefined) {
    throw new KekChangedError(
      `${path} appeared and vanished while tokenproxy was starting (another process removed it); start again`,
    );
  }
  return theirs;
}

/** A vault whose KEK lives in this process. The KEK is copied, so the caller may zero its Buffer. */
export function createLocalVault(kek: Buffer): Vault {
  return createEnvelopeVault(createLocalKek(kek));
}

/** The local KEK provider itself (for rewrapping between KEKs). The KEK is copied. */
export function createLocalKek(kek: Buffer): KeyEncryptionKey {
  if (!Buffer.isBuffer(kek) || kek.length !== KEK_LENGTH) {
    throw new TypeError(`the key-encryption key must be ${KEK_LENGTH} bytes`);
  }
  // createSecretKey copies into native memory: a Buffer.from copy first would be a pooled one that
  // nobody zeroes.
  const key = createSecretKey(kek);
  return {
    fingerprint: kekFingerprint(kek),
    wrap: (dek, aad) => Promise.resolve(gcmWrap(key, dek, aad)),
    unwrap: (wrapped, aad) => Promise.resolve(gcmUnwrap(key, wrapped, aad)),
    deriveKey: (purpose) =>
      Promise.resolve(Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `tokenproxy:${purpose}`, 32))),
  };
}

function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') {
    return err.code;
  }
  return undefined;
}

/** Undefined when the file does not exist; throws when it exists but must not be used. */
export async function readKeyFile(path: string): Promise<Buffer | undefined> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw fileError(path, `cannot read ${path} (${errnoCode(err) ?? 'unknown error'})`, { cause: err });
  }
  try {
    // Checked on the open handle, so the file judged is the file read.
    const stat = await handle.stat();
    if (!stat.isFile()) throw fileError(path, `${path} is not a regular file`);
    const mode = stat.mode & 0o777;
    // Windows has no group/other mode bits to speak of: Node reports 0o666 for every writable file.
    if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
      throw fileError(
        path,
        `${path} has mode ${mode.toString(8).padStart(4, '0')}, which lets other users read the master key; ` +
          `run \`chmod 600 ${path}\` and start again`,
      );
    }
    const content = await handle.readFile();
    try {
      const key = decodeKey(content.toString('utf8'));
      if (key === undefined) {
        throw fileError(
          path,
          `${path} does not hold a master key: it must contain ${ACCEPTED}. ` +
            `If no provider key was ever stored with it, delete it and a new one is generated; ` +
            `otherwise restore it from backup`,
        );
      }
      return key;
    } finally {
      content.fill(0);
    }
  } finally {
    await handle.close();
  }
}

/**
 * Writes a complete key file under a temporary name, then hard-links it into place. The link fails
 * with EEXIST when the name is taken, so of any number of simultaneous starts exactly one wins, and
 * no reader ever sees a half-written file (which a plain `wx` create followed by a write would allow).
 * Returns undefined when another start won.
 */
export async function createKeyFile(path: string): Promise<Buffer | undefined> {
  const key = randomBytes(KEK_LENGTH);
  const content = Buffer.from(`${key.toString('base64')}\n`, 'utf8');
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeExclusive(temp, content);
    try {
      await link(temp, path);
      return key;
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'EEXIST') {
        key.fill(0);
        return undefined;
      }
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') {
        throw fileError(path, `cannot create ${path} (${code ?? 'unknown error'})`, { cause: err });
      }
    } finally {
      await unlink(temp).catch(() => undefined);
    }
    // File systems without hard links: create in place, and let readers wait out the short window.
    try {
      await writeExclusive(path, content);
      return key;
    } catch (err) {
      if (errnoCode(err) === 'EEXIST') {
        key.fill(0);
        await waitUntilWritten(path);
        return undefined;
      }
      throw fileError(path, `cannot create ${path} (${errnoCode(err) ?? 'unknown error'})`, { cause: err });
    }
  } catch (err) {
    key.fill(0);
    throw err;
  } finally {
    content.fill(0);
  }
}

async function writeExclusive(path: string, content: Buffer): Promise<void> {
  const handle = await open(path, 'wx', 0o600);
  try {
    await writeFile(handle, content);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function waitUntilWritten(path: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const handle = await open(path, 'r');
    try {
      if ((await handle.stat()).size > 0) return;
    } finally {
      await handle.close();
    }
    await sleep(20);
  }
}
