import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the secret is `whsec_` + base64
 * of random bytes; a delivery carries `webhook-id`, `webhook-timestamp` (unix seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` keyed with the decoded
 * bytes. Receivers verify with any Standard Webhooks library.
 */

export const WEBHOOK_SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

/** Fresh secret key bytes; the caller stores them encrypted and shows `formatWebhookSecret` once. */
export function newWebhookSecretKey(): Buffer {
  return randomBytes(SECRET_BYTES);
}

export function formatWebhookSecret(key: Buffer): string {
  return WEBHOOK_SECRET_PREFIX + key.toString('base64');
}

export function webhookSignature(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

export function webhookHeaders(
  key: Buffer,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': webhookSignature(key, id, timestampSeconds, body),
  };
}
