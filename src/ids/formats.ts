import { hash } from 'node:crypto';
import { randomBase58, timeOrderedBase58 } from './base58.js';

/**
 * Formats of everything tokenproxy hands out (DESIGN §1). Pure: generation draws from the CSPRNG,
 * everything else is string rules.
 */

const B58 = '[1-9A-HJ-NP-Za-km-z]';

export const SANITIZED_TOKEN_PREFIX = 'svc_hb_';
export const API_KEY_PREFIX = 'svc_sk_';
export const REQUEST_ID_PREFIX = 'req_';
const LONG = 43;
const SHORT = 22;

export const ID_PREFIXES = {
  key: 'key_',
  webhook: 'wh_',
  event: 'evt_',
  account: 'acct_',
  apiKey: 'ak_',
  audit: 'aud_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const SANITIZED_TOKEN_RE = new RegExp(`^${SANITIZED_TOKEN_PREFIX}${B58}{${LONG}}$`);
const API_KEY_RE = new RegExp(`^${API_KEY_PREFIX}${B58}{${LONG}}$`);
const TOKEN_ID_RE = new RegExp(`^${B58}{${LONG}}$`);
const ID_RES: Record<IdKind, RegExp> = {
  key: new RegExp(`^${ID_PREFIXES.key}${B58}{${SHORT}}$`),
  webhook: new RegExp(`^${ID_PREFIXES.webhook}${B58}{${SHORT}}$`),
  event: new RegExp(`^${ID_PREFIXES.event}${B58}{${SHORT}}$`),
  account: new RegExp(`^${ID_PREFIXES.account}${B58}{${SHORT}}$`),
  apiKey: new RegExp(`^${ID_PREFIXES.apiKey}${B58}{${SHORT}}$`),
  audit: new RegExp(`^${ID_PREFIXES.audit}${B58}{${SHORT}}$`),
};

export function newSanitizedToken(): string {
  return SANITIZED_TOKEN_PREFIX + randomBase58(LONG);
}

export function newApiKey(): string {
  return API_KEY_PREFIX + randomBase58(LONG);
}

export function newTokenId(): string {
  return randomBase58(LONG);
}

export function newId(kind: IdKind): string {
  return ID_PREFIXES[kind] + randomBase58(SHORT);
}

/**
 * `req_` + 22 base58: 8 of time (ms) then 14 random (~82 bits). Time-ordered so the request and anomaly
 * logs, keyed by it, grow at the end of their indexes (see docs/decisions.md, "Request ids").
 */
export function newRequestId(nowMs: number): string {
  return timeOrderedBase58(SHORT, nowMs, REQUEST_ID_PREFIX);
}

export function isSanitizedToken(value: string): boolean {
  return SANITIZED_TOKEN_RE.test(value);
}

export function isApiKey(value: string): boolean {
  return API_KEY_RE.test(value);
}

export function isTokenId(value: string): boolean {
  return TOKEN_ID_RE.test(value);
}

export function isId(kind: IdKind, value: string): boolean {
  return ID_RES[kind].test(value);
}

/**
 * Sanitized tokens and API keys are stored only as this digest. They carry ~252 random bits, so a
 * plain SHA-256 (no salt, no slow hash) is enough and keeps lookup a single indexed equality.
 */
export function secretDigest(secret: string): string {
  // The one-shot form: no Hash object per call (this runs for every proxied request).
  return hash('sha256', secret, 'hex');
}

/** `svc_hb_` + first 4 + `…` + last 4 of the body: enough to recognise a token, useless to use it. */
export function sanitizedKeyHint(token: string): string {
  const body = token.slice(SANITIZED_TOKEN_PREFIX.length);
  return `${SANITIZED_TOKEN_PREFIX}${body.slice(0, 4)}\u2026${body.slice(-4)}`;
}

/** The visible start of an account API key, kept so a user can tell their keys apart. */
export function apiKeyStart(apiKey: string): string {
  return apiKey.slice(0, API_KEY_PREFIX.length + 4);
}

/**
 * A provider key's hint: its last 4 characters (DESIGN §5). A short key would give away too large a
 * share of itself, so keys under 12 characters get an empty hint.
 */
export function realKeyHint(realKey: string): string {
  return realKey.length < 12 ? '' : realKey.slice(-4);
}
