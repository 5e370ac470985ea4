/**
 * The PKCS#11 library of the HSM thread (pkcs11-thread.ts), and its session on the configured token.
 * Its calls block, so only that thread may use it.
 */
import pkcs11js from 'pkcs11js';
import { KekError } from './kek-error.js';
import { ckrName, ckrOf, describeHsmFailure } from './pkcs11-errors.js';
import type { Pkcs11ThreadData } from './pkcs11-protocol.js';

export interface HsmSession {
  readonly lib: pkcs11js.PKCS11;
  /** Loads the library (once), initialises it, opens a session and logs in. */
  open(): Buffer;
  /**
   * After an HSM error, sessions may be dead and (SoftHSM2) the library may not see a restored token
   * until it is finalized and initialized again: so everything is reopened from scratch.
   */
  reopen(): Buffer;
}

/** C_Login's answers to a PIN that is wrong or not a PIN at all: the setting is at fault. */
const PIN_REFUSED: ReadonlySet<number> = new Set([
  pkcs11js.CKR_PIN_INCORRECT,
  pkcs11js.CKR_PIN_LEN_RANGE,
  pkcs11js.CKR_PIN_INVALID,
]);

/**
 * Why the library did not load. The loader's message starts with the path, which the message names
 * already.
 */
function loadFailure(module: string, err: unknown): string {
  const why = describeHsmFailure(err);
  return why.startsWith(`${module}: `) ? why.slice(module.length + 2) : why;
}

export function createHsmSession(data: Pkcs11ThreadData): HsmSession {
  const lib = new pkcs11js.PKCS11();
  let loaded = false;
  let initialized = false;

  function findSlot(): Buffer {
    for (const slot of lib.C_GetSlotList(true)) {
      if (lib.C_GetTokenInfo(slot).label.trim() === data.tokenLabel) return slot;
    }
    throw new KekError(
      'pkcs11_token_label',
      `no token labelled "${data.tokenLabel}" in ${data.module} (check pkcs11_token_label, and that the HSM is connected)`,
    );
  }

  function open(): Buffer {
    if (!loaded) {
      try {
        lib.load(data.module);
      } catch (err) {
        throw new KekError(
          'pkcs11_module',
          `cannot load the PKCS#11 library ${data.module} (${loadFailure(data.module, err)})`,
        );
      }
      loaded = true;
    }
    if (!initialized) {
      lib.C_Initialize();
      initialized = true;
    }
    const slot = findSlot();
    const s = lib.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
    try {
      lib.C_Login(s, pkcs11js.CKU_USER, data.pin);
    } catch (err) {
      const code = ckrOf(err);
      if (code !== pkcs11js.CKR_USER_ALREADY_LOGGED_IN) {
        try {
          lib.C_CloseSession(s);
        } catch {
          // The session is being abandoned anyway.
        }
        if (code !== undefined && PIN_REFUSED.has(code)) {
          throw new KekError(
            'pkcs11_pin',
            `the token "${data.tokenLabel}" refused the PIN (${ckrName(code)})`,
          );
        }
        if (code === pkcs11js.CKR_PIN_LOCKED) {
          throw new KekError(
            'pkcs11_pin',
            `the token "${data.tokenLabel}" has locked its user PIN (${ckrName(code)})`,
          );
        }
        throw err;
      }
    }
    return s;
  }

  function reopen(): Buffer {
    if (initialized) {
      try {
        lib.C_Finalize();
      } catch {
        // Finalizing a library in trouble may fail; initializing again is what matters.
      }
      initialized = false;
    }
    return open();
  }

  return { lib, open, reopen };
}

/** Blocks the HSM thread (never the event loop): a short pause before trying the HSM again. */
export function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
