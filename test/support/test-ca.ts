import { isIP } from 'node:net';
import { randomBytes, webcrypto } from 'node:crypto';
import type * as X509 from '@peculiar/x509';

export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
}

export interface TestCa {
  caCertPem: string;
  /** Leaf certificate for TLS servers; each host becomes a DNS or IP subjectAltName. */
  issue(hosts: string[]): Promise<IssuedCertificate>;
}

// Passed explicitly to every @peculiar/x509 call rather than installed as the library's process-wide provider,
// which other code in the same test process might also set.
const crypto = webcrypto;

// Loaded lazily and once; @peculiar/x509 needs the Reflect metadata API (tsyringe) before it loads.
let x509Module: Promise<typeof X509> | undefined;

function loadX509(): Promise<typeof X509> {
  x509Module ??= import('reflect-metadata').then(() => import('@peculiar/x509'));
  return x509Module;
}

const ecdsa = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

function serialNumber(): string {
  const bytes = randomBytes(16);
  // A leading 0 bit keeps the DER INTEGER positive, as RFC 5280 requires.
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}

// Backdated so that small clock differences between test processes never make a fresh cert "not yet valid".
function validity(): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - 60 * 60 * 1000), notAfter: new Date(now + 7 * 24 * 60 * 60 * 1000) };
}

async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return crypto.subtle.generateKey(ecdsa, true, ['sign', 'verify']);
}

export async function createTestCa(commonName = 'tokenproxy test CA'): Promise<TestCa> {
  const x509 = await loadX509();
  const caKeys = await generateKeys();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialNumber(),
      name: `CN=${commonName}`,
      keys: caKeys,
      signingAlgorithm: ecdsa,
      ...validity(),
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey, false, crypto),
      ],
    },
    crypto,
  );

  async function issue(hosts: string[]): Promise<IssuedCertificate> {
    if (hosts.length === 0) throw new Error('issue() needs at least one host name or IP');
    const leafKeys = await generateKeys();
    const names: X509.JsonGeneralName[] = hosts.map((host) => ({
      type: isIP(host) === 0 ? 'dns' : 'ip',
      value: host,
    }));
    const cert = await x509.X509CertificateGenerator.create(
      {
        serialNumber: serialNumber(),
        subject: `CN=${hosts[0] ?? ''}`,
        issuer: caCert.subject,
        publicKey: leafKeys.publicKey,
        signingKey: caKeys.privateKey,
        signingAlgorithm: ecdsa,
        ...validity(),
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          new x509.SubjectAlternativeNameExtension(names),
          await x509.AuthorityKeyIdentifierExtension.create(caCert, false, crypto),
          await x509.SubjectKeyIdentifierExtension.create(leafKeys.publicKey, false, crypto),
        ],
      },
      crypto,
    );
    const pkcs8 = await crypto.subtle.exportKey('pkcs8', leafKeys.privateKey);
    return { certPem: cert.toString('pem'), keyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') };
  }

  return { caCertPem: caCert.toString('pem'), issue };
}
