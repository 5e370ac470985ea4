/**
 * What the HSM thread (pkcs11-thread.ts) computes with a KEK inside the HSM: AES-GCM wrapping of
 * data keys and the CMAC key derivation of vault.mac.
 */
import { randomBytes } from 'node:crypto';
import pkcs11js from 'pkcs11js';

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
   * authenticate.
   */
  function selfTest(s: Buffer, key: Buffer): boolean {
    try {
      const probe = randomBytes(16);
      const aad = Buffer.from('tokenproxy/pkcs11/self-test');
      const back = unwrapOrThrow(s, key, wrap(s, key, probe, aad), aad);
      return back.equals(probe);
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
        if (selfTest(s, key)) return null;
        throw err;
      }
    },
    selfTest,
    derive(s, key, purpose) {
      const blocks: Buffer[] = [];
      for (const counter of [1, 2]) {
        lib.C_SignInit(s, { mechanism: pkcs11js.CKM_AES_CMAC }, key);
        const input = Buffer.concat([Buffer.from([counter]), purpose, Buffer.from([0, 0, 1, 0])]);
        blocks.push(Buffer.from(lib.C_Sign(s, input, Buffer.alloc(16))));
      }
      return Buffer.concat(blocks);
    },
  };
}
