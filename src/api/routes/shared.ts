import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import type { Provider } from '../../providers/providers.js';
import type { ApiDeps } from '../context.js';

export function requireProvider(deps: ApiDeps, id: string): Provider {
  const provider = deps.providers.get(id);
  if (!provider) {
    throw new TokenProxyError(
      'unknown_provider',
      `Unknown provider "${id}". Known providers: ${deps.providers.ids().join(', ')}.`,
      { param: 'provider' },
    );
  }
  return provider;
}

/**
 * Encrypts a real key for storage. The plaintext copy made here is zeroed at once; the JSON string
 * it came from cannot be wiped (JavaScript strings are immutable) and is left to the GC.
 */
export async function sealRealKey(
  deps: ApiDeps,
  realKey: string,
  keyId: string,
  accountId: string,
): Promise<Buffer> {
  const plaintext = Buffer.from(realKey, 'utf8');
  try {
    return await deps.vault.encrypt(plaintext, { keyId, accountId });
  } finally {
    plaintext.fill(0);
  }
}
