import { X509Certificate, createPrivateKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { certificateFingerprint } from '../../src/tls/fingerprint.js';
import { generateSelfSigned } from '../../src/tls/self-signed.js';

const FINGERPRINT_RE = /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/;
const DAY_MS = 24 * 60 * 60 * 1000;

describe('generateSelfSigned', () => {
  it('makes a P-256 localhost server certificate valid for about 825 days', async () => {
    const { certPem, keyPem } = await generateSelfSigned();
    expect(certPem).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);

    const cert = new X509Certificate(certPem);
    const key = createPrivateKey(keyPem);
    expect(key.asymmetricKeyType).toBe('ec');
    expect(key.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(cert.checkPrivateKey(key)).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);

    expect(cert.subject).toBe('CN=localhost');
    expect(cert.issuer).toBe('CN=localhost');
    expect(cert.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(cert.ca).toBe(false);
    expect(cert.keyUsage).toContain('1.3.6.1.5.5.7.3.1');
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBe('::1');
    expect(cert.checkHost('example.com')).toBeUndefined();

    const from = Date.parse(cert.validFrom);
    const to = Date.parse(cert.validTo);
    expect(from).toBeLessThanOrEqual(Date.now());
    expect(Math.round((to - Date.now()) / DAY_MS)).toBe(825);
  });

  it('makes a new key and serial every time', async () => {
    const [a, b] = await Promise.all([generateSelfSigned(), generateSelfSigned()]);
    expect(a.keyPem).not.toBe(b.keyPem);
    expect(new X509Certificate(a.certPem).serialNumber).not.toBe(new X509Certificate(b.certPem).serialNumber);
  });
});

describe('certificateFingerprint', () => {
  it('is colon-separated upper-case SHA-256 hex, equal to Node’s own', async () => {
    const { certPem } = await generateSelfSigned();
    const fingerprint = certificateFingerprint(certPem);
    expect(fingerprint).toMatch(FINGERPRINT_RE);
    expect(fingerprint).toBe(new X509Certificate(certPem).fingerprint256);
  });

  it('throws on something that is not a certificate', () => {
    expect(() => certificateFingerprint('not a certificate')).toThrow();
  });
});
