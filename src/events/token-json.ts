import type { Static } from 'typebox';
import type { TokenObject } from '../api/schemas.js';
import { tokenStatusAt, type TokenRecord } from '../store/records.js';

/**
 * A token as the world sees it: what the API answers with and what `token.revoked` and
 * `token.expired` events carry (DESIGN §6), from one function so the two cannot differ. Nothing
 * secret is copied out.
 */
export function tokenJson(token: TokenRecord, now: Date, proxyUrl: string): Static<typeof TokenObject> {
  return {
    token_id: token.id,
    name: token.name,
    target_provider: token.provider,
    real_key_ref: token.keyId,
    authorized_origins: [...token.authorizedOrigins],
    authorized_ips: [...token.authorizedIps],
    rate_limit:
      token.rateLimit === null
        ? null
        : { requests: token.rateLimit.requests, window: token.rateLimit.window },
    status: tokenStatusAt(token, now.toISOString()),
    created_at: token.createdAt,
    last_used_at: token.lastUsedAt,
    expires_at: token.expiresAt,
    revoked_at: token.revokedAt,
    request_count: token.requestCount,
    sanitized_key_hint: token.hint,
    proxy_base_url: `${proxyUrl}/${token.provider}`,
    budget: token.budget ?? null,
  };
}
