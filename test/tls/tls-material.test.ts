import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateSelfSigned } from '../../src/tls/self-signed.js';
import { loadTlsMaterial, TlsMaterialError, type TlsMaterial } from '../../src/tls/tls-material.js';
import { rejection } from '../support/rejection.js';

const FINGERPRINT_RE = /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/;
const posix = process.platform !== 'win32';

let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tokenproxy-tls-'));
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('generated material in <dataDir>/tls', () => {
  it('is generated once, then reused with the same fingerprint', async () => {
    const first = await loadTlsMaterial({ dataDir });
    expect(first.generated).toBe(true);
    expect(first.fingerprint).toMatch(FINGERPRINT_RE);
    expect(first.certPath).toBe(join(dataDir, 'tls', 'cert.pem'));

    const second = await loadTlsMaterial({ dataDir });
    expect(second.generated).toBe(false);
    expect(second.fingerprint).toBe(first.fingerprint);
    expect(second.cert).toBe(first.cert);
    expect(second.key).toBe(first.key);
    expect(second.certPath).toBe(first.certPath);
  });

  it('writes cert.pem and key.pem with private modes, and nothing else', async () => {
    const material = await loadTlsMaterial({ dataDir });
    const dir = join(dataDir, 'tls');
    expect((await readdir(dir)).sort()).toEqual(['cert.pem', 'key.pem']);
    expect(await readdir(dataDir)).toEqual(['tls']);
    expect(await readFile(join(dir, 'cert.pem'), 'utf8')).toBe(material.cert);
    expect(await readFile(join(dir, 'key.pem'), 'utf8')).toBe(material.key);
    if (posix) {
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
      expect((await stat(join(dir, 'key.pem'))).mode & 0o777).toBe(0o600);
    }
    expect(new X509Certificate(material.cert).fingerprint256).toBe(material.fingerprint);
  });

  it('creates a missing data dir', async () => {
    const nested = join(dataDir, 'x', 'y');
    expect((await loadTlsMaterial({ dataDir: nested })).generated).toBe(true);
    expect((await loadTlsMaterial({ dataDir: nested })).generated).toBe(false);
  });

  it('lands exactly one pair when several starts race', async () => {
    const all = await Promise.all(Array.from({ length: 5 }, () => loadTlsMaterial({ dataDir })));
    expect(all.filter((m) => m.generated)).toHaveLength(1);
    expect(new Set(all.map((m) => m.fingerprint)).size).toBe(1);
    expect(new Set(all.map((m) => m.key)).size).toBe(1);
    expect(await readdir(dataDir)).toEqual(['tls']);
  });

  it('fills an existing empty tls directory', async () => {
    await mkdir(join(dataDir, 'tls'));
    expect((await loadTlsMaterial({ dataDir })).generated).toBe(true);
  });

  it('refuses half a pair instead of regenerating over it', async () => {
    const first = await loadTlsMaterial({ dataDir });
    await rm(join(dataDir, 'tls', 'key.pem'));
    const err = await rejection(loadTlsMaterial({ dataDir }));
    expect(err).toBeInstanceOf(TlsMaterialError);
    expect(err.message).toContain('key.pem');
    expect(err.message).toContain(join(dataDir, 'tls'));
    expect(await readFile(join(dataDir, 'tls', 'cert.pem'), 'utf8')).toBe(first.cert);
  });
});

describe('files from tls_cert and tls_key', () => {
  async function writePair(name: string): Promise<{ certFile: string; keyFile: string; certPem: string }> {
    const { certPem, keyPem } = await generateSelfSigned();
    const certFile = join(dataDir, `${name}-cert.pem`);
    const keyFile = join(dataDir, `${name}-key.pem`);
    await writeFile(certFile, certPem);
    await writeFile(keyFile, keyPem, { mode: 0o600 });
    return { certFile, keyFile, certPem };
  }

  it('loads a matching pair without generating anything', async () => {
    const { certFile, keyFile, certPem } = await writePair('a');
    const material = await loadTlsMaterial({ dataDir, certFile, keyFile });
    expect(material.generated).toBe(false);
    expect(material.cert).toBe(certPem);
    expect(material.certPath).toBe(certFile);
    expect(material.fingerprint).toBe(new X509Certificate(certPem).fingerprint256);
    expect((await readdir(dataDir)).includes('tls')).toBe(false);
  });

  it('refuses a certificate and key that do not match, naming both settings', async () => {
    const a = await writePair('a');
    const b = await writePair('b');
    const err = await rejection(loadTlsMaterial({ dataDir, certFile: a.certFile, keyFile: b.keyFile }));
    expect(err).toBeInstanceOf(TlsMaterialError);
    expect(err.message).toContain('tls_cert');
    expect(err.message).toContain('tls_key');
    expect(err.message).toContain(a.certFile);
    expect(err.message).toContain(b.keyFile);
    expect(err.message).not.toMatch(/PRIVATE KEY/);
  });

  it('refuses only one of the two', async () => {
    const { certFile, keyFile } = await writePair('a');
    const onlyCert = await rejection(loadTlsMaterial({ dataDir, certFile }));
    expect(onlyCert.message).toMatch(/tls_cert is set but tls_key is not/);
    expect(onlyCert instanceof TlsMaterialError && onlyCert.setting).toBe('tls_key');
    const onlyKey = await rejection(loadTlsMaterial({ dataDir, keyFile }));
    expect(onlyKey.message).toMatch(/tls_key is set but tls_cert is not/);
    expect(onlyKey instanceof TlsMaterialError && onlyKey.setting).toBe('tls_cert');
  });

  it('refuses unreadable files, naming the setting and path', async () => {
    const { certFile, keyFile } = await writePair('a');
    const missing = join(dataDir, 'missing.pem');
    const noCert = await rejection(loadTlsMaterial({ dataDir, certFile: missing, keyFile }));
    expect(noCert.message).toContain('tls_cert');
    expect(noCert.message).toContain(missing);
    expect(noCert.message).toContain('ENOENT');
    const noKey = await rejection(loadTlsMaterial({ dataDir, certFile, keyFile: missing }));
    expect(noKey.message).toContain('tls_key');
    expect(noKey.message).toContain(missing);
  });

  it('refuses files that are not PEM, without echoing the key', async () => {
    const { certFile, keyFile } = await writePair('a');
    const junk = join(dataDir, 'junk.pem');
    await writeFile(junk, 'hello, this is not PEM\n');
    const badCert = await rejection(loadTlsMaterial({ dataDir, certFile: junk, keyFile }));
    expect(badCert.message).toContain('tls_cert');
    expect(badCert.message).toMatch(/not a PEM certificate/);

    const badKey = await rejection(loadTlsMaterial({ dataDir, certFile, keyFile: junk }));
    expect(badKey.message).toContain('tls_key');
    expect(badKey.message).toMatch(/not an unencrypted PEM private key/);

    // A certificate given as the key: PEM, but not a key.
    const certAsKey = await rejection(loadTlsMaterial({ dataDir, certFile, keyFile: certFile }));
    expect(certAsKey.message).toContain('tls_key');

    // A corrupted key body must not be quoted back.
    const key = await readFile(keyFile, 'utf8');
    const lines = key.split('\n');
    lines[1] = `${lines[1]?.slice(0, 10) ?? ''}!!!!`;
    await writeFile(junk, lines.join('\n'));
    const corrupt = await rejection(loadTlsMaterial({ dataDir, certFile, keyFile: junk }));
    expect(corrupt.message).toContain('tls_key');
    expect(corrupt.message).not.toContain(lines[1]);
  });

  it.runIf(posix && process.getuid?.() !== 0)('reports a file it may not read', async () => {
    const { certFile, keyFile } = await writePair('a');
    await chmod(keyFile, 0o000);
    const err = await rejection(loadTlsMaterial({ dataDir, certFile, keyFile }));
    expect(err.message).toContain('tls_key');
    expect(err.message).toContain('EACCES');
  });
});

describe('a real TLS 1.3 server with the generated material', () => {
  let server: Server;
  let port: number;
  let material: TlsMaterial;

  beforeEach(async () => {
    material = await loadTlsMaterial({ dataDir });
    server = createServer({ cert: material.cert, key: material.key, minVersion: 'TLSv1.3' }, (_req, res) => {
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function get(options: {
    servername?: string;
    ca?: string;
    maxVersion?: 'TLSv1.2' | 'TLSv1.3';
  }): Promise<{ body: string; protocol: string | null; fingerprint: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/',
          ...(options.servername === undefined ? {} : { servername: options.servername }),
          ...(options.ca === undefined ? {} : { ca: options.ca }),
          ...(options.maxVersion === undefined ? {} : { maxVersion: options.maxVersion }),
          agent: false,
        },
        (res) => {
          const socket = res.socket;
          if (!(socket instanceof TLSSocket)) {
            reject(new Error('not a TLS socket'));
            return;
          }
          const protocol = socket.getProtocol();
          const fingerprint = socket.getPeerCertificate().fingerprint256;
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ body, protocol, fingerprint }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  it('serves a client that trusts the certificate, for localhost', async () => {
    const res = await get({ servername: 'localhost', ca: material.cert });
    expect(res.body).toBe('ok');
    expect(res.protocol).toBe('TLSv1.3');
    expect(res.fingerprint).toBe(material.fingerprint);
  });

  it('serves a client that trusts the certificate, for 127.0.0.1', async () => {
    const res = await get({ ca: material.cert });
    expect(res.body).toBe('ok');
    expect(res.protocol).toBe('TLSv1.3');
  });

  it('still works after a restart reuses the material', async () => {
    const again = await loadTlsMaterial({ dataDir });
    const res = await get({ servername: 'localhost', ca: again.cert });
    expect(res.body).toBe('ok');
  });

  it('is refused by a client that does not trust it', async () => {
    await expect(get({ servername: 'localhost' })).rejects.toThrow(/self[- ]signed/i);
  });

  it('is refused for a name the certificate does not cover', async () => {
    await expect(get({ servername: 'example.com', ca: material.cert })).rejects.toThrow(
      /altnames|example\.com/i,
    );
  });

  it('refuses a TLS 1.2 client', async () => {
    await expect(
      get({ servername: 'localhost', ca: material.cert, maxVersion: 'TLSv1.2' }),
    ).rejects.toThrow();
  });
});

describe('generating on a thread of its own', () => {
  const built = (file: string): string => fileURLToPath(new URL(`../../dist/tls/${file}`, import.meta.url));

  /**
   * Runs the built module in a fresh Node and reports whether the X.509 library was loaded on its
   * main thread: `reflect-metadata`, which the library needs, defines `Reflect.getMetadata` globally.
   */
  async function x509LoadedAfter(script: string): Promise<string> {
    // A file, not `--input-type=module -e`: worker threads inherit the flag, which then refuses their file.
    const file = join(dataDir, `probe-${Math.random().toString(36).slice(2)}.mjs`);
    await writeFile(file, `${script}\nconsole.log(typeof Reflect.getMetadata);\n`);
    return new Promise((resolve, reject) => {
      execFile(process.execPath, [file], { timeout: 30_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout.trim()),
      );
    });
  }

  it('leaves the X.509 library out of the process that serves', async () => {
    const material = JSON.stringify(built('tls-material.js'));
    const dir = JSON.stringify(join(dataDir, 'served'));
    const script = `const { loadTlsMaterial } = await import(${material});
const m = await loadTlsMaterial({ dataDir: ${dir} });
if (!m.generated || !m.cert.includes('BEGIN CERTIFICATE')) throw new Error('no pair generated');`;
    expect(await x509LoadedAfter(script)).toBe('undefined');
    // The probe sees the library when it is loaded where the server runs.
    const direct = `await (await import(${JSON.stringify(built('self-signed.js'))})).generateSelfSigned();`;
    expect(await x509LoadedAfter(direct)).toBe('function');
    expect((await loadTlsMaterial({ dataDir: join(dataDir, 'served') })).generated).toBe(false);
  });
});
