/**
 * The KEK versions' key objects on the token, for the HSM thread (pkcs11-thread.ts): found by label,
 * created, destroyed and relabelled there, as `kek rotate` and the first start need.
 */
import { randomBytes } from 'node:crypto';
import pkcs11js from 'pkcs11js';
import { KekError } from './kek-error.js';
import {
  nextKeyLabel,
  pkcs11Fingerprint,
  TOKENPROXY_CKA_ID_PREFIX,
  type Pkcs11ThreadData,
} from './pkcs11-protocol.js';
import { pause } from './pkcs11-session.js';

/** A KEK looked up by CKA_ID is searched for this many times, this far apart, before it is called gone. */
const FIND_TRIES = 3;
const FIND_PAUSE_MS = 5;

export interface HsmKeys {
  /**
   * The start: finds the KEK by its label (or, after a rotation stopped between destroying the old
   * version and relabelling the new, by the next version's label), creating it when allowed.
   */
  start(s: Buffer): { readonly created: boolean; readonly keyObjectId: Buffer };
  /** The KEK id (hex) of the version found at start. */
  primaryId(): string;
  /** The object handle of a KEK version, looked up by CKA_ID after a reopen. */
  handle(s: Buffer, kekId: string): Buffer;
  /** Finds the version `kekId` among the keys labelled for this store (current and next). */
  load(s: Buffer, kekId: string): Buffer | null;
  generate(s: Buffer): Buffer;
  destroy(s: Buffer, kekId: string): null;
  promote(s: Buffer, kekId: string): null;
  /** Before the library is re-initialised: its object handles die with it. */
  forgetHandles(): void;
}

export function createHsmKeys(lib: pkcs11js.PKCS11, data: Pkcs11ThreadData): HsmKeys {
  /**
   * The KEK versions this thread uses, by KEK id (hex). Object handles do not survive a re-initialised
   * library, so each version is kept by its CKA_ID and its handle looked up again when needed.
   */
  const keys = new Map<string, { readonly ckaId: Buffer; handle: Buffer | undefined }>();
  let primaryId = '';

  function findKeys(s: Buffer, template: pkcs11js.Template): Buffer[] {
    lib.C_FindObjectsInit(s, template);
    try {
      return lib.C_FindObjects(s, 2);
    } finally {
      lib.C_FindObjectsFinal(s);
    }
  }

  function byLabel(s: Buffer, label: string): Buffer[] {
    return findKeys(s, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
      { type: pkcs11js.CKA_LABEL, value: label },
    ]);
  }

  function createKey(s: Buffer, label: string): Buffer {
    return lib.C_GenerateKey(s, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
      { type: pkcs11js.CKA_KEY_TYPE, value: pkcs11js.CKK_AES },
      { type: pkcs11js.CKA_VALUE_LEN, value: 32 },
      { type: pkcs11js.CKA_TOKEN, value: true },
      { type: pkcs11js.CKA_PRIVATE, value: true },
      { type: pkcs11js.CKA_SENSITIVE, value: true },
      { type: pkcs11js.CKA_EXTRACTABLE, value: false },
      { type: pkcs11js.CKA_ENCRYPT, value: true },
      { type: pkcs11js.CKA_DECRYPT, value: true },
      // For the CMAC key derivation of vault.mac; the key never signs anything else.
      { type: pkcs11js.CKA_SIGN, value: true },
      // Relabelled when a rotation promotes it (the configured label passes to the new version).
      { type: pkcs11js.CKA_MODIFIABLE, value: true },
      { type: pkcs11js.CKA_LABEL, value: label },
      // A random id tells this key apart from a same-labelled key on another token: it is what the
      // KEK id (the envelope fingerprint) is made of. Its prefix marks it as made by a tokenproxy
      // store, which a new store must not take over (a key made by the HSM's own tools it may).
      { type: pkcs11js.CKA_ID, value: Buffer.concat([TOKENPROXY_CKA_ID_PREFIX, randomBytes(16)]) },
    ]);
  }

  function ckaIdOf(s: Buffer, key: Buffer, label: string): Buffer {
    const [id] = lib.C_GetAttributeValue(s, key, [{ type: pkcs11js.CKA_ID }]);
    const value = id?.value;
    if (!Buffer.isBuffer(value) || value.length === 0) {
      throw new KekError(
        'pkcs11_key_label',
        `the key "${label}" has no CKA_ID; tokenproxy identifies its KEK by it (create the KEK with one)`,
      );
    }
    return Buffer.from(value);
  }

  /** Registers a key object as a KEK version; returns its KEK id. */
  function remember(s: Buffer, key: Buffer, label: string): string {
    const ckaId = ckaIdOf(s, key, label);
    const kekId = pkcs11Fingerprint(ckaId).toString('hex');
    keys.set(kekId, { ckaId, handle: key });
    return kekId;
  }

  function handle(s: Buffer, kekId: string): Buffer {
    const entry = keys.get(kekId);
    if (entry === undefined) throw new Error(`KEK ${kekId} is not loaded in this process`);
    if (entry.handle === undefined) {
      let found: Buffer | undefined;
      // SoftHSM2 leaves an object out of a search while another process rewrites it (a rotation
      // relabelling the key): missing once is not gone.
      for (let tries = 0; found === undefined && tries < FIND_TRIES; tries++) {
        if (tries > 0) pause(FIND_PAUSE_MS);
        [found] = findKeys(s, [
          { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
          { type: pkcs11js.CKA_ID, value: entry.ckaId },
        ]);
      }
      if (found === undefined) throw new Error(`the HSM no longer holds KEK ${kekId}`);
      entry.handle = found;
    }
    return entry.handle;
  }

  return {
    start(s) {
      const labelled = byLabel(s, data.keyLabel);
      if (labelled.length > 1) {
        throw new KekError(
          'pkcs11_key_label',
          `more than one key on the token "${data.tokenLabel}" has the label "${data.keyLabel}"; give the KEK a label of its own`,
        );
      }
      let key = labelled[0];
      let label = data.keyLabel;
      let created = false;
      if (key === undefined) {
        const next = byLabel(s, nextKeyLabel(data.keyLabel));
        if (next.length === 1 && !data.create) {
          key = next[0];
          label = nextKeyLabel(data.keyLabel);
        }
      }
      if (key === undefined) {
        if (!data.create) {
          throw new KekError(
            'pkcs11_key_label',
            `no key labelled "${data.keyLabel}" on the token "${data.tokenLabel}"`,
          );
        }
        key = createKey(s, data.keyLabel);
        created = true;
      }
      primaryId = remember(s, key, label);
      return { created, keyObjectId: keys.get(primaryId)?.ckaId ?? Buffer.alloc(0) };
    },
    primaryId: () => primaryId,
    handle,
    load(s, kekId) {
      const known = keys.get(kekId);
      if (known !== undefined) return Buffer.from(known.ckaId);
      for (const label of [data.keyLabel, nextKeyLabel(data.keyLabel)]) {
        for (const key of byLabel(s, label)) {
          const ckaId = ckaIdOf(s, key, label);
          if (pkcs11Fingerprint(ckaId).toString('hex') === kekId) {
            keys.set(kekId, { ckaId, handle: key });
            return Buffer.from(ckaId);
          }
        }
      }
      return null;
    },
    generate(s) {
      const label = nextKeyLabel(data.keyLabel);
      const existing = byLabel(s, label);
      if (existing.length > 1) throw new Error(`more than one key on the token has the label "${label}"`);
      const key = existing[0] ?? createKey(s, label);
      const kekId = remember(s, key, label);
      return Buffer.from(keys.get(kekId)?.ckaId ?? Buffer.alloc(0));
    },
    destroy(s, kekId) {
      const entry = keys.get(kekId);
      if (entry === undefined) return null;
      let found: Buffer | undefined;
      try {
        found = handle(s, kekId);
      } catch {
        // Already destroyed (a rotation run again after it got this far).
      }
      if (found !== undefined) lib.C_DestroyObject(s, found);
      keys.delete(kekId);
      return null;
    },
    promote(s, kekId) {
      lib.C_SetAttributeValue(s, handle(s, kekId), [{ type: pkcs11js.CKA_LABEL, value: data.keyLabel }]);
      return null;
    },
    forgetHandles() {
      for (const entry of keys.values()) entry.handle = undefined;
    },
  };
}
