/**
 * What the HSM thread (pkcs11-thread.ts) computes with a KEK inside the HSM: AES-GCM wrapping of
 * data keys and the CMAC key derivation of vault.mac.
 */
import { randomBytes } from 'node:crypto';
import pkcs11js from 'pkcs11js';
import { CKR_AEAD_DECRYPT_FAILED } from './pkcs11-errors.js';

const TAG_BITS = 128;
const NONCE_LEN = 12;

export interface HsmCrypto {
  wrap(s: Buffer, key: Buffer, dek: Buffer, aad: Buffer): Buffer;
  /** Null when the envelope did not authenticate; throws when the HSM failed. */
  unwrap(s: Buffer, key: Buffer, wrapped: Buffer, aad: Buffer): Buffer | null;
  selfTest(s: Buffer, key: Buffer): boolean;
  /** CMAC in counter mode (NIST SP 800-108): 32 bytes for `purpose`, derived inside the HSM. */
  derive(s: Buffer, key: Buffer, purpose: Buffer): Buffer;
}

/**
 * The codes an HSM gives a GCM tag that does not verify: SoftHSM2's CKR_GENERAL_ERROR, the
 * CKR_ENCRYPTED_DATA_* of PKCS#11 2.40, and 3.0's CKR_AEAD_DECRYPT_FAILED.
 */
const TAG_FAILURE_CODES: ReadonlySet<number> = new Set([
  pkcs11js.CKR_GENERAL_ERROR,
  pkcs11js.CKR_ENCRYPTED_DATA_INVALID,
  pkcs11js.CKR_ENCRYPTED_DATA_LEN_RANGE,
  CKR_AEAD_DECRYPT_FAILED,
]);

function mayBeTagFailure(err: unknown): boolean {
  return err instanceof pkcs11js.Pkcs11Error && TAG_FAILURE_CODES.has(err.code);
}

/**
 * A sound key's operation failing while another process rewrites its object: SoftHSM2 reports the
 * handle invalid for a moment. The session and handle are fine and a later try works, so the HSM
 * thread retries these apart from real failures (docs/decisions.md, "An unwrap that fails while the
 * token changes").
 */
export function isObjectGlitch(err: unknown): boolean {
  return (
    err instanceof pkcs11js.Pkcs11Error &&
    (err.code === pkcs11js.CKR_OBJECT_HANDLE_INVALID || err.code === pkcs11js.CKR_KEY_HANDLE_INVALID)
  );
}

function gcm(nonce: Buffer, aad: Buffer) {
  // SoftHSM2 reads the PKCS#11 2.40 layout (with ulIvBits); the 2.30 one is mis-sized for it.
  return {
    mechanism: pkcs11js.CKM_AES_GCM,
    parameter: {
      type: pkcs11js.CK_PARAMS_AES_GCM_v240,
      iv: nonce,
      aad,
      ivBits: nonce.length * 8,
      tagBits: TAG_BITS,
    },
  };
}

export function createHsmCrypto(lib: pkcs11js.PKCS11): HsmCrypto {
  function wrap(s: Buffer, key: Buffer, dek: Buffer, aad: Buffer): Buffer {
    const nonce = randomBytes(NONCE_LEN);
    lib.C_EncryptInit(s, gcm(nonce, aad), key);
    const out = lib.C_Encrypt(s, dek, Buffer.alloc(dek.length + TAG_BITS / 8));
    return Buffer.concat([nonce, out]);
  }

  function unwrapOrThrow(s: Buffer, key: Buffer, wrapped: Buffer, aad: Buffer): Buffer {
    lib.C_DecryptInit(s, gcm(wrapped.subarray(0, NONCE_LEN), aad), key);
    return lib.C_Decrypt(s, wrapped.subarray(NONCE_LEN), Buffer.alloc(wrapped.length));
  }

  /**
   * SoftHSM2 reports a failed GCM tag as CKR_GENERAL_ERROR, like a real failure. A round trip of a
   * throwaway block tells the two apart: when it works, the HSM is fine and the envelope did not
   * authenticate. An object glitch is thrown rather than called a failure, so that it is retried.
   */
  function selfTestOrGlitch(s: Buffer, key: Buffer): boolean {
    try {
      const probe = randomBytes(16);
      const aad = Buffer.from('tokenproxy/pkcs11/self-test');
      const back = unwrapOrThrow(s, key, wrap(s, key, probe, aad), aad);
      return back.equals(probe);
    } catch (err) {
      if (isObjectGlitch(err)) throw err;
      return false;
    }
  }

  function selfTest(s: Buffer, key: Buffer): boolean {
    try {
      return selfTestOrGlitch(s, key);
    } catch {
      return false;
    }
  }

  return {
    wrap,
    unwrap(s, key, wrapped, aad) {
      try {
        return unwrapOrThrow(s, key, wrapped, aad);
      } catch (err) {
        // Any other code is the HSM failing, not the envelope: the thread retries (an object
        // glitch on the same session, anything else on a new one). A glitch in the self-test or
        // the second try is thrown too: only a clean verdict may call an envelope tampered.
        if (!mayBeTagFailure(err) || !selfTestOrGlitch(s, key)) throw err;
        // The self-test may pass only because the token settled after the first try: a second try
        // tells a passing glitch from an envelope that does not authenticate, which fails every time.
        try {
          return unwrapOrThrow(s, key, wrapped, aad);
        } catch (again) {
          if (mayBeTagFailure(again)) return null;
          throw again;
        }
      }
    },
    selfTest,
    derive(s, key, purpose) {
      // Buffers of their own (never the pool's): the block is zeroed here, the key once sent.
      const derived = Buffer.alloc(32);
      const block = Buffer.alloc(16);
      for (const counter of [1, 2]) {
        lib.C_SignInit(s, { mechanism: pkcs11js.CKM_AES_CMAC }, key);
        const input = Buffer.concat([Buffer.from([counter]), purpose, Buffer.from([0, 0, 1, 0])]);
        lib.C_Sign(s, input, block).copy(derived, (counter - 1) * 16);
      }
      block.fill(0);
      return derived;
    },
  };
}
