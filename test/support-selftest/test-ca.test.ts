import { X509Certificate, createPrivateKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestCa } from '../support/test-ca.js';

describe('createTestCa', () => {
  it('issues ECDSA P-256 leaf certificates for DNS names and IPs, signed by a CA certificate', async () => {
    const ca = await createTestCa();
    const caCert = new X509Certificate(ca.caCertPem);
    expect(caCert.ca).toBe(true);
    expect(caCert.verify(caCert.publicKey)).toBe(true);

    const { certPem, keyPem } = await ca.issue(['localhost', '127.0.0.1', '::1']);
    const leaf = new X509Certificate(certPem);
    expect(leaf.ca).toBe(false);
    expect(leaf.checkIssued(caCert)).toBe(true);
    expect(leaf.verify(caCert.publicKey)).toBe(true);
    expect(leaf.checkHost('localhost')).toBe('localhost');
    expect(leaf.checkHost('example.com')).toBeUndefined();
    expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(leaf.checkIP('::1')).toBe('::1');
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(leaf.checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
    expect(leaf.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(new Date(leaf.validFrom).getTime()).toBeLessThan(Date.now());
  });

  it('creates an independent CA each time', async () => {
    const [a, b] = await Promise.all([createTestCa(), createTestCa()]);
    const leaf = new X509Certificate((await a.issue(['localhost'])).certPem);
    expect(leaf.checkIssued(new X509Certificate(b.caCertPem))).toBe(false);
  });
});
