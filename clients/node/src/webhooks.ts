import { createHmac, timingSafeEqual } from 'node:crypto';
import { toCamel } from './case.js';
import { WebhookVerificationError } from './errors.js';
import type { Event } from './types.js';

export type WebhookHeaders =
  { get(name: string): string | null } | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyOptions {
  /** Largest accepted distance between `webhook-timestamp` and now, in seconds (default 300). */
  readonly toleranceSeconds?: number;
  /** "Now", for tests. */
  readonly now?: Date;
}

const DEFAULT_TOLERANCE_S = 5 * 60;

/**
 * Checks a webhook delivery (Standard Webhooks) and returns its event, names camelCased like
 * `events.list()`. `payload` must be the raw request body exactly as received: a re-serialised
 * JSON object will not match. Throws WebhookVerificationError on any mismatch.
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyOptions = {},
): Event {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature header.');
  }
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError('Invalid webhook-timestamp header.');
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_S;
  const sentAt = Number(timestamp);
  // Both ways: an old delivery may be a replay, one from the future a forged or badly clocked one.
  if (sentAt < now - tolerance) throw new WebhookVerificationError('The webhook timestamp is too old.');
  if (sentAt > now + tolerance) throw new WebhookVerificationError('The webhook timestamp is in the future.');

  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload);
  const expected = createHmac('sha256', secretBytes(secret))
    .update(`${id}.${timestamp}.`)
    .update(body)
    .digest();
  // Several signatures are allowed (a secret being rotated); one valid v1 signature is enough.
  const matched = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matched) throw new WebhookVerificationError('No matching webhook signature.');

  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('The webhook payload is not JSON.');
  }
  return toCamel(event) as Event;
}

function secretBytes(secret: string): Buffer {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length === 0) throw new WebhookVerificationError('The webhook secret is empty or not base64.');
  return bytes;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  for (const [key, value] of Object.entries(record)) {
    if (key.toLowerCase() !== name) continue;
    if (typeof value === 'string') return value;
    if (Array.isArray(value)) return value.join(' ');
  }
  return undefined;
}
