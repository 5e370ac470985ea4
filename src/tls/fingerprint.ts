import { X509Certificate } from 'node:crypto';

/**
 * SHA-256 fingerprint of a PEM certificate (the first, when given a chain) as colon-separated
 * upper-case hex, the form browsers and `openssl x509 -fingerprint -sha256` show, so users can compare.
 */
export function certificateFingerprint(certPem: string): string {
  return new X509Certificate(certPem).fingerprint256.toUpperCase();
}
