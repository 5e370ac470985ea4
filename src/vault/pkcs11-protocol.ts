/** Messages between the PKCS#11 KEK (pkcs11-kek.ts) and its HSM thread (pkcs11-thread.ts). */
import { createHash } from 'node:crypto';

/** The KEK id of an HSM key: derived from its random CKA_ID, so another token's same-labelled key differs. */
export function pkcs11Fingerprint(keyObjectId: Uint8Array): Buffer {
  return createHash('sha256').update('tokenproxy/pkcs11-kek/').update(keyObjectId).digest().subarray(0, 8);
}

/** The label of the next KEK version while `kek rotate` runs; it takes the configured label when done. */
export function nextKeyLabel(keyLabel: string): string {
  return `${keyLabel}.next`;
}

export interface Pkcs11ThreadData {
  readonly module: string;
  readonly tokenLabel: string;
  /** Crosses to the thread once, in workerData; never logged or echoed. */
  readonly pin: string;
  readonly keyLabel: string;
  /** Create the AES-256 KEK when no key has the label (DESIGN §8: first start). */
  readonly create: boolean;
}

/**
 * `load`: find the version `kek` among the configured label's keys (answers its CKA_ID, or null);
 * `generate`: the next version's key, created once (answers its CKA_ID); `destroy`: delete the
 * version `kek`; `promote`: give the version `kek` the configured label.
 */
export type HsmOp = 'wrap' | 'unwrap' | 'derive' | 'health' | 'load' | 'generate' | 'destroy' | 'promote';

export interface ToHsm {
  readonly id: number;
  readonly op: HsmOp;
  /** The KEK version (its id as hex) the operation uses; the one found at start when absent. */
  readonly kek?: string;
  /** wrap: the DEK; unwrap: nonce || ciphertext || tag; derive: the KDF input. */
  readonly data?: Uint8Array<ArrayBuffer>;
  readonly aad?: Uint8Array<ArrayBuffer>;
}

/**
 * A copy of `bytes` in an ArrayBuffer of its own, for postMessage's transfer list: the bytes then move
 * to the other thread instead of being copied again, so a data key crossing threads leaves no copy
 * on the sending side (a transferred buffer is emptied there) for the collector to free unzeroed.
 */
export function movable(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const own = new Uint8Array(bytes.length);
  own.set(bytes);
  return own;
}

/** A Buffer over the same memory as `bytes`, not a copy, so zeroing it zeroes what arrived. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The setting a start-up failure is about, named in the error the user sees. */
export type Pkcs11Setting = 'pkcs11_module' | 'pkcs11_token_label' | 'pkcs11_pin' | 'pkcs11_key_label';

const PKCS11_SETTINGS: ReadonlySet<string> = new Set<Pkcs11Setting>([
  'pkcs11_module',
  'pkcs11_token_label',
  'pkcs11_pin',
  'pkcs11_key_label',
]);

export function isPkcs11Setting(setting: string): setting is Pkcs11Setting {
  return PKCS11_SETTINGS.has(setting);
}

export type FromHsm =
  | { readonly id: number; readonly ok: true; readonly value: Uint8Array<ArrayBuffer> | null }
  /** `unavailable`: the HSM failed; `setting`: it answered, and a setting is wrong (start-up only). */
  | { readonly id: number; readonly ok: false; readonly kind: 'unavailable'; readonly message: string }
  | {
      readonly id: number;
      readonly ok: false;
      readonly kind: 'setting';
      readonly setting: Pkcs11Setting;
      readonly message: string;
    };

/** The start of the `CKA_ID` of every key a tokenproxy store creates in an HSM. */
export const TOKENPROXY_CKA_ID_PREFIX = Buffer.from('tokenproxy:', 'ascii');

/** The answer to the thread's start (message id 0): the KEK object's CKA_ID, and whether it was created. */
export interface HsmReady {
  readonly id: 0;
  readonly ok: true;
  readonly keyObjectId: Uint8Array;
  readonly created: boolean;
}
