import { createPrivateKey, randomBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../config/config-error.js';
import { certificateFingerprint } from './fingerprint.js';

/**
 * Certificate and key for both listeners (DESIGN §2): the operator's files from `tls_cert` and
 * `tls_key`, or a self-signed pair generated once into `<data-dir>/tls/` and reused on every start,
 * so the fingerprint a user pinned stays valid.
 */

export interface TlsMaterialOptions {
  readonly dataDir: string;
  readonly certFile?: string | undefined;
  readonly keyFile?: string | undefined;
}

export interface TlsMaterial {
  /** PEM, possibly a chain (leaf first), as given to `tls.createServer({ cert })`. */
  readonly cert: string;
  readonly key: string;
  /** SHA-256 of the leaf certificate, `AB:CD:…`. */
  readonly fingerprint: string;
  /** True only on the start that created the self-signed pair. */
  readonly generated: boolean;
  readonly certPath: string;
}

/** Bad TLS configuration. `setting` is the config name (`tls_cert`, `tls_key`) to point the user at. */
export class TlsMaterialError extends ConfigError {
  readonly setting: 'tls_cert' | 'tls_key' | 'data_dir';

  constructor(setting: 'tls_cert' | 'tls_key' | 'data_dir', message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TlsMaterialError';
    this.setting = setting;
  }
}

export const TLS_DIR = 'tls';
export const CERT_FILE = 'cert.pem';
export const KEY_FILE = 'key.pem';

export async function loadTlsMaterial(options: TlsMaterialOptions): Promise<TlsMaterial> {
  const certFile = options.certFile === '' ? undefined : options.certFile;
  const keyFile = options.keyFile === '' ? undefined : options.keyFile;
  if (certFile !== undefined || keyFile !== undefined) {
    if (certFile === undefined) {
      throw new TlsMaterialError('tls_cert', 'tls_key is set but tls_cert is not: give both, or neither');
    }
    if (keyFile === undefined) {
      throw new TlsMaterialError('tls_key', 'tls_cert is set but tls_key is not: give both, or neither');
    }
    return { ...(await loadPair(certFile, keyFile, 'tls_cert', 'tls_key')), generated: false };
  }
  return loadOrGenerate(options.dataDir);
}

type Setting = TlsMaterialError['setting'];

function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') {
    return err.code;
  }
  return undefined;
}

async function readText(path: string, setting: Setting): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new TlsMaterialError(
      setting,
      `${setting}: cannot read ${path} (${errnoCode(err) ?? 'unknown error'})`,
      {
        cause: err,
      },
    );
  }
}

async function loadPair(
  certPath: string,
  keyPath: string,
  certSetting: Setting,
  keySetting: Setting,
): Promise<Omit<TlsMaterial, 'generated'>> {
  const cert = await readText(certPath, certSetting);
  const key = await readText(keyPath, keySetting);

  let x509: X509Certificate;
  try {
    if (!cert.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM certificate block');
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new TlsMaterialError(certSetting, `${certSetting}: ${certPath} is not a PEM certificate`, {
      cause: err,
    });
  }

  let privateKey: KeyObject;
  try {
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) throw new Error('no PEM private key block');
    privateKey = createPrivateKey({ key, format: 'pem' });
  } catch {
    // The cause is dropped on purpose: a parser error could quote part of the key.
    throw new TlsMaterialError(keySetting, `${keySetting}: ${keyPath} is not an unencrypted PEM private key`);
  }

  if (!x509.checkPrivateKey(privateKey)) {
    const what =
      certSetting === keySetting ? `${certPath} and ${keyPath}` : `${certSetting} and ${keySetting}`;
    throw new TlsMaterialError(
      keySetting,
      `${what} do not match: ${keyPath} is not the private key of the certificate in ${certPath}`,
    );
  }
  return { cert, key, fingerprint: certificateFingerprint(cert), certPath };
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw new TlsMaterialError('data_dir', `cannot read ${path} (${errnoCode(err) ?? 'unknown error'})`, {
      cause: err,
    });
  }
}

async function loadExisting(dir: string): Promise<Omit<TlsMaterial, 'generated'> | undefined> {
  const certPath = join(dir, CERT_FILE);
  const keyPath = join(dir, KEY_FILE);
  const [hasCert, hasKey] = await Promise.all([exists(certPath), exists(keyPath)]);
  if (!hasCert && !hasKey) return undefined;
  if (!hasCert || !hasKey) {
    // Never regenerate over half a pair: the remaining file may be one a user has pinned or replaced.
    throw new TlsMaterialError(
      'data_dir',
      `${dir} holds ${hasCert ? CERT_FILE : KEY_FILE} but not ${hasCert ? KEY_FILE : CERT_FILE}: ` +
        `restore the missing file, or remove ${dir} to have a new certificate generated`,
    );
  }
  return loadPair(certPath, keyPath, 'data_dir', 'data_dir');
}

/**
 * The pair is written into a fresh private directory that is then renamed to `<data-dir>/tls`.
 * rename() onto a non-empty directory fails, so when several processes of a cluster start at once
 * exactly one pair lands, and nobody ever sees a certificate without its key.
 */
async function loadOrGenerate(dataDir: string): Promise<TlsMaterial> {
  const dir = join(dataDir, TLS_DIR);
  const found = await loadExisting(dir);
  if (found !== undefined) return { ...found, generated: false };

  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // On a thread of its own, which ends with it: the X.509 library would stay loaded for good.
  const { generateSelfSignedOnThread } = await import('./generate-on-thread.js');
  const { certPem, keyPem } = await generateSelfSignedOnThread();
  const staging = await mkdtemp(join(dataDir, `.tls-${randomBytes(4).toString('hex')}-`)); // mode 0700
  try {
    await writeFile(join(staging, KEY_FILE), keyPem, { mode: 0o600, flag: 'wx' });
    await writeFile(join(staging, CERT_FILE), certPem, { mode: 0o644, flag: 'wx' });
    try {
      await rename(staging, dir);
    } catch (err) {
      const code = errnoCode(err);
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'EPERM' && code !== 'EACCES') {
        throw new TlsMaterialError('data_dir', `cannot create ${dir} (${code ?? 'unknown error'})`, {
          cause: err,
        });
      }
      // Another process got there first, or the directory already holds other files.
      const theirs = await loadExisting(dir);
      if (theirs === undefined) {
        throw new TlsMaterialError(
          'data_dir',
          `${dir} exists but holds no ${CERT_FILE} and ${KEY_FILE}, and could not be replaced (${code}): ` +
            `remove it, or set tls_cert and tls_key`,
          { cause: err },
        );
      }
      return { ...theirs, generated: false };
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return {
    cert: certPem,
    key: keyPem,
    fingerprint: certificateFingerprint(certPem),
    generated: true,
    certPath: join(dir, CERT_FILE),
  };
}
