import type { Logger } from 'pino';
import type { KekRepo, KekVersion } from '../store/store.js';
import { opensCanary } from './kek-check.js';
import { withInheritedMacKeys } from './mac-keys.js';
import {
  createEnvelopeVault,
  envelopeKekId,
  VaultError,
  type KeyBinding,
  type KeyEncryptionKey,
  type Vault,
} from './vault.js';

/**
 * The vault every command uses: every live KEK version of the store at once (DESIGN §8), so a
 * server keeps working while `kek rotate` or `kek migrate` moves envelopes from one version to the
 * next in another process. Envelopes open under the version they name; new envelopes are sealed
 * under the newest live version. The view of the store's versions is re-read when an envelope names
 * a version not held yet, and before a write when it is older than WRITE_VIEW_MAX_AGE_MS: a rotation
 * waits longer than that before its last sweep, so no write lands under a version it is retiring.
 */

/** A write never uses a view of the versions older than this (`kek rotate` waits it out, thrice). */
export const WRITE_VIEW_MAX_AGE_MS = 2000;
/** Retired versions are also dropped from memory without writes, this often. */
const BACKGROUND_REFRESH_MS = 5000;

/** Where a provider keeps KEK versions: the data dir's key files, or the HSM. */
export interface KekLoader {
  /** Asked only for the store's versions of this provider. */
  readonly provider: KekVersion['provider'];
  /** The KEK with this id, or undefined when this provider does not have it. */
  load(kekId: string): Promise<KeyEncryptionKey | undefined>;
}

export interface Keyring extends Vault {
  /** Re-reads the store's versions: loads live ones not held yet, drops retired ones. */
  refresh(): Promise<void>;
  /** Ids of the versions held now. */
  heldIds(): readonly string[];
  /** The KEK of a version held now (what `kek rotate` rewraps with). */
  kekFor(kekId: string): KeyEncryptionKey | undefined;
  /** The envelope vault of one held version. */
  vaultFor(kekId: string): Vault | undefined;
}

export interface KeyringOptions {
  readonly keks: Pick<KekRepo, 'list'>;
  readonly primary: KeyEncryptionKey;
  readonly loaders: readonly KekLoader[];
  /** Released by close(): the providers' resources (the HSM thread). */
  readonly closers?: ReadonlyArray<() => Promise<void>>;
  readonly logger?: Logger | undefined;
}

interface Held {
  readonly kek: KeyEncryptionKey;
  readonly vault: Vault;
  /** Whether the version's inherited MAC keys (if any) are applied: its record was read. */
  readonly recorded: boolean;
}

export function createKeyring(options: KeyringOptions): Keyring {
  const primaryVault = createEnvelopeVault(options.primary);
  const held = new Map<string, Held>([
    [primaryVault.kekId, { kek: options.primary, vault: primaryVault, recorded: false }],
  ]);
  let writeId = primaryVault.kekId;
  /** Set when the newest live version cannot be loaded here: writes are refused, not sealed under an older one. */
  let writeBlocked: string | undefined;
  /** `performance.now()` when the view was read: monotonic, so a wall clock stepped back cannot make an old view look new. */
  let viewAt = Number.NEGATIVE_INFINITY;
  let liveVersions: readonly KekVersion[] = [];
  let closed = false;

  async function reload(): Promise<void> {
    const startedAt = performance.now();
    const versions = await options.keks.list();
    const live = versions.filter((v) => v.retiredAt === null);
    liveVersions = live;
    for (const version of live) {
      const entry = held.get(version.id);
      if (entry === undefined) await tryLoad(version);
      else if (!entry.recorded) held.set(version.id, await recorded(entry.kek, entry.vault, version));
    }
    for (const version of versions) {
      // A retired version's KEK is not kept in memory: destroying it must leave nothing usable.
      if (version.retiredAt !== null && held.has(version.id) && held.size > 1) held.delete(version.id);
    }
    const newest = live.at(-1);
    if (newest === undefined) {
      writeBlocked = undefined;
    } else if (held.has(newest.id)) {
      if (newest.id !== writeId) {
        options.logger?.info({ kek_id: newest.id, previous: writeId }, 'new envelopes now sealed under KEK');
      }
      writeId = newest.id;
      writeBlocked = undefined;
    } else {
      writeBlocked = `the store's newest KEK version ${newest.id} (${newest.provider}) cannot be loaded by this process`;
    }
    viewAt = startedAt;
  }

  async function tryLoad(version: KekVersion): Promise<void> {
    for (const loader of options.loaders) {
      // The HSM is not asked for a master key's version: a miss there makes it look again (below).
      if (loader.provider !== version.provider) continue;
      let kek: KeyEncryptionKey | undefined;
      try {
        kek = await loader.load(version.id);
      } catch (err) {
        options.logger?.warn(
          { kek_id: version.id, err: err instanceof Error ? err.message : 'non-error' },
          'KEK version could not be loaded',
        );
        continue;
      }
      if (kek === undefined) continue;
      const vault = createEnvelopeVault(kek);
      // Proven by its canary, like the configured KEK at start: a matching id only suggests it.
      if (vault.kekId === version.id && (await opensCanary(vault, version))) {
        held.set(version.id, await recorded(kek, vault, version));
        options.logger?.info({ kek_id: version.id, kek: version.provider }, 'KEK version loaded');
        return;
      }
      options.logger?.warn({ kek_id: version.id }, 'a key with this KEK id does not open its canary');
    }
  }

  async function recorded(kek: KeyEncryptionKey, vault: Vault, version: KekVersion): Promise<Held> {
    if (version.macKeys === null) return { kek, vault, recorded: true };
    const macKek = await withInheritedMacKeys(kek, vault, version);
    return { kek: macKek, vault: createEnvelopeVault(macKek), recorded: true };
  }

  let tail: Promise<void> = Promise.resolve();
  let pending: Promise<void> | undefined;
  function refresh(): Promise<void> {
    // Callers that ask before a reload starts share it; one asking during a reload gets the next.
    if (pending !== undefined) return pending;
    const next = tail
      .catch(() => undefined)
      .then(() => {
        pending = undefined;
        return reload();
      });
    pending = next;
    tail = next;
    return next;
  }

  const timer = setInterval(() => {
    refresh().catch((err: unknown) =>
      options.logger?.debug({ err: err instanceof Error ? err.message : 'non-error' }, 'KEK refresh failed'),
    );
  }, BACKGROUND_REFRESH_MS);
  timer.unref();

  async function writeVault(): Promise<Vault> {
    if (performance.now() - viewAt > WRITE_VIEW_MAX_AGE_MS) {
      try {
        await refresh();
      } catch (err) {
        throw new VaultError(
          'kek_unavailable',
          `the store's KEK versions could not be read (${err instanceof Error ? err.message : 'error'})`,
        );
      }
    }
    if (writeBlocked !== undefined) throw new VaultError('kek_unavailable', writeBlocked);
    const current = held.get(writeId);
    if (current === undefined) throw new VaultError('kek_unavailable', `KEK ${writeId} is no longer held`);
    return current.vault;
  }

  async function readVault(envelope: Buffer): Promise<Vault> {
    const id = Buffer.isBuffer(envelope) ? envelopeKekId(envelope) : null;
    if (id !== null && !held.has(id)) {
      // An envelope rewrapped by a rotation in another process: its version is loaded once, here.
      await refresh().catch(() => undefined);
    }
    const found = id === null ? undefined : held.get(id)?.vault;
    if (found !== undefined) return found;
    const live = liveVersions.find((v) => v.id === id);
    if (live !== undefined) {
      // The store's own KEK version, which this process cannot load (an HSM it has no settings for):
      // the server must be given them, a retry will not do; still not a 500 nor a wrong key.
      throw new VaultError(
        'kek_unavailable',
        `KEK version ${live.id} (${live.provider}) is in use in the store but cannot be loaded by this process`,
      );
    }
    // Not a version of this store: the vault of the current version says why it does not open.
    return (held.get(writeId) ?? { vault: primaryVault }).vault;
  }

  return {
    get kekId() {
      return writeId;
    },
    async encrypt(plaintext: Buffer, binding: KeyBinding) {
      return (await writeVault()).encrypt(plaintext, binding);
    },
    async decrypt(envelope: Buffer, binding: KeyBinding) {
      return (await readVault(envelope)).decrypt(envelope, binding);
    },
    async mac(purpose: string, data: string) {
      return (await writeVault()).mac(purpose, data);
    },
    async healthy() {
      // A live version this process cannot load (rotated elsewhere with key material it cannot see)
      // makes every key under it answer 503: not ready, so a load balancer takes the process out.
      if (performance.now() - viewAt > WRITE_VIEW_MAX_AGE_MS) await refresh().catch(() => undefined);
      if (writeBlocked !== undefined || liveVersions.some((v) => !held.has(v.id))) return false;
      return (held.get(writeId)?.vault ?? primaryVault).healthy();
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      for (const close of options.closers ?? []) await close();
    },
    refresh,
    heldIds: () => [...held.keys()],
    kekFor: (kekId) => held.get(kekId)?.kek,
    vaultFor: (kekId) => held.get(kekId)?.vault,
  };
}
