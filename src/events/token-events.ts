import { newId } from '../ids/formats.js';
import type { TokenEventBuilder } from '../store/store.js';
import { tokenJson } from './token-json.js';

/**
 * `token.revoked` and `token.expired` carry the token object exactly as the API shows it at the
 * moment of the change (DESIGN §6).
 */
export function tokenEvent(
  type: 'token.revoked' | 'token.expired',
  at: Date,
  publicProxyUrl: string,
): TokenEventBuilder {
  return (token) => ({
    id: newId('event'),
    accountId: token.accountId,
    type,
    createdAt: at.toISOString(),
    data: tokenJson(token, at, publicProxyUrl),
  });
}
