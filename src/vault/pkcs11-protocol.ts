/** Messages between the PKCS#11 KEK (pkcs11-kek.ts) and its HSM thread (pkcs11-thread.ts). */

export interface Pkcs11ThreadData {
  readonly module: string;
  readonly tokenLabel: string;
  /** Crosses to the thread once, in workerData; never logged or echoed. */
  readonly pin: string;
  readonly keyLabel: string;
  /** Create the AES-256 KEK when no key has the label (DESIGN §8: first start). */
  readonly create: boolean;
}

export type HsmOp = 'wrap' | 'unwrap' | 'derive' | 'health';

export interface ToHsm {
  readonly id: number;
  readonly op: HsmOp;
  /** wrap: the DEK; unwrap: nonce || ciphertext || tag; derive: the KDF input. */
  readonly data?: Uint8Array;
  readonly aad?: Uint8Array;
}

/** The setting a start-up failure is about, named in the error the user sees. */
export type Pkcs11Setting = 'pkcs11_module' | 'pkcs11_token_label' | 'pkcs11_pin' | 'pkcs11_key_label';

export type FromHsm =
  | { readonly id: number; readonly ok: true; readonly value: Uint8Array | null }
  /** `unavailable`: the HSM failed; `setting`: it answered, and a setting is wrong (start-up only). */
  | { readonly id: number; readonly ok: false; readonly kind: 'unavailable'; readonly message: string }
  | {
      readonly id: number;
      readonly ok: false;
      readonly kind: 'setting';
      readonly setting: Pkcs11Setting;
      readonly message: string;
    };

/** The answer to the thread's start (message id 0): the KEK object's CKA_ID, and whether it was created. */
export interface HsmReady {
  readonly id: 0;
  readonly ok: true;
  readonly keyObjectId: Uint8Array;
  readonly created: boolean;
}
