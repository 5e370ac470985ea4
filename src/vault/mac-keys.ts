import type { KekVersion } from '../store/store.js';
import type { KeyBinding, KeyEncryptionKey, Vault } from './vault.js';

/**
 * The vault's MAC keys across KEK versions (docs/decisions.md). A MAC key derived from the KEK
 * would change with every rotation, and an idempotency record stored under the old one (kept 24 h)
 * would then answer `idempotency_conflict` to the very retry it exists for. So a version made by
 * `kek rotate` / `kek migrate` carries the MAC keys of the version it replaced, sealed under itself,
 * and a KEK of such a version derives those instead of its own.
 */

/** Every purpose the vault computes MACs for; a version's inherited keys cover exactly these. */
export const MAC_PURPOSES = ['idempotency-fingerprint'] as const;

function binding(kekId: string): KeyBinding {
  return { keyId: `kek-mac:${kekId}`, accountId: 'tokenproxy' };
}

/** Seals the MAC keys `from` uses (its inherited ones, or its own derivations) under `to`. */
export async function inheritMacKeys(from: KeyEncryptionKey, to: Vault): Promise<Buffer> {
  const keys: Record<string, string> = {};
  for (const purpose of MAC_PURPOSES) {
    const key = await from.deriveKey(purpose);
    keys[purpose] = key.toString('base64');
    key.fill(0);
  }
  const plaintext = Buffer.from(JSON.stringify(keys), 'utf8');
  try {
    return await to.encrypt(plaintext, binding(to.kekId));
  } finally {
    plaintext.fill(0);
  }
}

/**
 * The KEK of `version` as the vault must use it: with the MAC keys the version inherited, if any.
 * `vault` is the version's own envelope vault (to open them). Throws VaultError when they do not open.
 */
export async function withInheritedMacKeys(
  kek: KeyEncryptionKey,
  vault: Vault,
  version: Pick<KekVersion, 'id' | 'macKeys'>,
): Promise<KeyEncryptionKey> {
  if (version.macKeys === null) return kek;
  const plaintext = await vault.decrypt(version.macKeys, binding(version.id));
  const inherited = new Map<string, Buffer>();
  try {
    const parsed = JSON.parse(plaintext.toString('utf8')) as Record<string, string>;
    for (const [purpose, value] of Object.entries(parsed))
      inherited.set(purpose, Buffer.from(value, 'base64'));
  } finally {
    plaintext.fill(0);
  }
  return {
    fingerprint: kek.fingerprint,
    wrap: (dek, aad) => kek.wrap(dek, aad),
    unwrap: (wrapped, aad) => kek.unwrap(wrapped, aad),
    deriveKey: (purpose) => {
      const key = inherited.get(purpose);
      return key === undefined ? kek.deriveKey(purpose) : Promise.resolve(Buffer.from(key));
    },
    ...(kek.healthy === undefined ? {} : { healthy: () => kek.healthy?.() ?? Promise.resolve(true) }),
  };
}
