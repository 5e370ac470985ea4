import { randomBytes, webcrypto } from 'node:crypto';
// @peculiar/x509 resolves its services through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

/**
 * The certificate `tokenproxy serve` uses when no `--tls-cert/--tls-key` is given (DESIGN §2): good
 * for the loopback names a local client dials, and pinned by its printed fingerprint.
 */

const VALIDITY_DAYS = 825; // the longest lifetime Apple platforms accept for a TLS server certificate
const DAY_MS = 24 * 60 * 60 * 1000;
// Backdated so a client whose clock runs a little behind still accepts a freshly generated certificate.
const BACKDATE_MS = 60 * 60 * 1000;

export const SELF_SIGNED_NAMES = { dns: ['localhost'], ip: ['127.0.0.1', '::1'] } as const;

export interface SelfSignedMaterial {
  readonly certPem: string;
  readonly keyPem: string;
}

let providerSet = false;

export async function generateSelfSigned(): Promise<SelfSignedMaterial> {
  if (!providerSet) {
    x509.cryptoProvider.set(webcrypto);
    providerSet = true;
  }
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256' };
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const now = Date.now();

  // Positive 128-bit serial: the top bit cleared so DER does not need a sign byte.
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01;

  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString('hex'),
    name: 'CN=localhost',
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + VALIDITY_DAYS * DAY_MS),
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
      new x509.SubjectAlternativeNameExtension([
        ...SELF_SIGNED_NAMES.dns.map((value) => ({ type: 'dns' as const, value })),
        ...SELF_SIGNED_NAMES.ip.map((value) => ({ type: 'ip' as const, value })),
      ]),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });

  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = x509.PemConverter.encode(pkcs8, 'PRIVATE KEY');
  pkcs8.fill(0);
  return { certPem: cert.toString('pem'), keyPem };
}
