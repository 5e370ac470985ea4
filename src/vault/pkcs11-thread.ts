/**
 * The HSM thread of the `pkcs11` KEK (DESIGN §8). pkcs11js calls are synchronous and an HSM may take
 * milliseconds (or hang): here they block only this thread, never the proxy's event loop. One
 * thread, one session: PKCS#11 initialisation is per process, so a second thread's C_Finalize
 * (needed to see a token again after SoftHSM2 lost it) would pull the sessions from under the first.
 * Started by pkcs11-kek.ts, never imported.
 */
import { randomBytes } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import pkcs11js from 'pkcs11js';
import type { FromHsm, HsmReady, Pkcs11Setting, Pkcs11ThreadData, ToHsm } from './pkcs11-protocol.js';

const data = workerData as Pkcs11ThreadData;
const port = parentPort;
if (port === null) throw new Error('pkcs11-thread runs only as a worker thread');

const TAG_BITS = 128;
const NONCE_LEN = 12;
/** After a failure, the library is re-initialised at most this often, however many requests wait. */
const REOPEN_EVERY_MS = 1000;

class SettingError extends Error {
  constructor(
    readonly setting: Pkcs11Setting,
    message: string,
  ) {
    super(message);
  }
}

interface Open {
  readonly session: Buffer;
  readonly key: Buffer;
}

const lib = new pkcs11js.PKCS11();
let loaded = false;
let initialized = false;
let open: Open | undefined;
let keyObjectId: Buffer | undefined;
let lastReopen = 0;

function pkcs11Code(err: unknown): string {
  return err instanceof Error ? err.message.split(':')[0]?.trim() || err.name : 'unknown error';
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

function findSlot(): Buffer {
  for (const slot of lib.C_GetSlotList(true)) {
    if (lib.C_GetTokenInfo(slot).label.trim() === data.tokenLabel) return slot;
  }
  throw new SettingError(
    'pkcs11_token_label',
    `no token labelled "${data.tokenLabel}" in ${data.module} (check pkcs11_token_label, and that the HSM is connected)`,
  );
}

function findKeys(session: Buffer, template: pkcs11js.Template): Buffer[] {
  lib.C_FindObjectsInit(session, template);
  try {
    return lib.C_FindObjects(session, 2);
  } finally {
    lib.C_FindObjectsFinal(session);
  }
}

function createKey(session: Buffer): Buffer {
  return lib.C_GenerateKey(session, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, [
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
    { type: pkcs11js.CKA_LABEL, value: data.keyLabel },
    // A random id tells this key apart from a same-labelled key on another token: it is what the
    // KEK id (the envelope fingerprint) is made of.
    { type: pkcs11js.CKA_ID, value: randomBytes(16) },
  ]);
}

/** Opens a session, logs in and finds the KEK. The first time, may create it. */
function openSession(first: boolean): { open: Open; created: boolean } {
  if (!loaded) {
    try {
      lib.load(data.module);
    } catch (err) {
      throw new SettingError(
        'pkcs11_module',
        `cannot load the PKCS#11 library ${data.module} (${pkcs11Code(err)})`,
      );
    }
    loaded = true;
  }
  if (!initialized) {
    lib.C_Initialize();
    initialized = true;
  }
  const slot = findSlot();
  const session = lib.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
  try {
    try {
      lib.C_Login(session, pkcs11js.CKU_USER, data.pin);
    } catch (err) {
      const code = pkcs11Code(err);
      if (code !== 'CKR_USER_ALREADY_LOGGED_IN') {
        if (code === 'CKR_PIN_INCORRECT' || code === 'CKR_PIN_LEN_RANGE' || code === 'CKR_PIN_INVALID') {
          throw new SettingError('pkcs11_pin', `the token "${data.tokenLabel}" refused the PIN (${code})`);
        }
        if (code === 'CKR_PIN_LOCKED') {
          throw new SettingError(
            'pkcs11_pin',
            `the token "${data.tokenLabel}" has locked its user PIN (${code})`,
          );
        }
        throw err;
      }
    }
    const template: pkcs11js.Template =
      first || keyObjectId === undefined
        ? [
            { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
            { type: pkcs11js.CKA_LABEL, value: data.keyLabel },
          ]
        : [
            { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
            { type: pkcs11js.CKA_ID, value: keyObjectId },
          ];
    const keys = findKeys(session, template);
    if (keys.length > 1) {
      throw new SettingError(
        'pkcs11_key_label',
        `more than one key on the token "${data.tokenLabel}" has the label "${data.keyLabel}"; give the KEK a label of its own`,
      );
    }
    let key = keys[0];
    let created = false;
    if (key === undefined) {
      if (!first || !data.create) {
        throw new SettingError(
          'pkcs11_key_label',
          `no key labelled "${data.keyLabel}" on the token "${data.tokenLabel}"`,
        );
      }
      key = createKey(session);
      created = true;
    }
    const [id] = lib.C_GetAttributeValue(session, key, [{ type: pkcs11js.CKA_ID }]);
    const value = id?.value;
    if (!Buffer.isBuffer(value) || value.length === 0) {
      throw new SettingError(
        'pkcs11_key_label',
        `the key "${data.keyLabel}" has no CKA_ID; tokenproxy identifies its KEK by it (create the KEK with one)`,
      );
    }
    keyObjectId = Buffer.from(value);
    return { open: { session, key }, created };
  } catch (err) {
    try {
      lib.C_CloseSession(session);
    } catch {
      // The session is being abandoned anyway.
    }
    throw err;
  }
}

/**
 * After an HSM error, sessions may be dead and (SoftHSM2) the library may not see a restored token
 * until it is finalized and initialized again: so everything is reopened from scratch.
 */
function reopen(): Open {
  const now = Date.now();
  if (now - lastReopen < REOPEN_EVERY_MS) throw new Error('the HSM failed moments ago; not retried yet');
  lastReopen = now;
  if (initialized) {
    try {
      lib.C_Finalize();
    } catch {
      // Finalizing a library in trouble may fail; initializing again is what matters.
    }
    initialized = false;
  }
  return openSession(false).open;
}

function wrap(o: Open, dek: Buffer, aad: Buffer): Buffer {
  const nonce = randomBytes(NONCE_LEN);
  lib.C_EncryptInit(o.session, gcm(nonce, aad), o.key);
  const out = lib.C_Encrypt(o.session, dek, Buffer.alloc(dek.length + TAG_BITS / 8));
  return Buffer.concat([nonce, out]);
}

function unwrapOrThrow(o: Open, wrapped: Buffer, aad: Buffer): Buffer {
  lib.C_DecryptInit(o.session, gcm(wrapped.subarray(0, NONCE_LEN), aad), o.key);
  return lib.C_Decrypt(o.session, wrapped.subarray(NONCE_LEN), Buffer.alloc(wrapped.length));
}

/**
 * SoftHSM2 reports a failed GCM tag as CKR_GENERAL_ERROR, like a real failure. A round trip of a
 * throwaway block tells the two apart: when it works, the HSM is fine and the envelope did not
 * authenticate.
 */
function selfTest(o: Open): boolean {
  try {
    const probe = randomBytes(16);
    const aad = Buffer.from('tokenproxy/pkcs11/self-test');
    const back = unwrapOrThrow(o, wrap(o, probe, aad), aad);
    return back.equals(probe);
  } catch {
    return false;
  }
}

/** CMAC in counter mode (NIST SP 800-108): 32 bytes for `purpose`, derived inside the HSM. */
function derive(o: Open, purpose: Buffer): Buffer {
  const blocks: Buffer[] = [];
  for (const counter of [1, 2]) {
    lib.C_SignInit(o.session, { mechanism: pkcs11js.CKM_AES_CMAC }, o.key);
    const input = Buffer.concat([Buffer.from([counter]), purpose, Buffer.from([0, 0, 1, 0])]);
    blocks.push(Buffer.from(lib.C_Sign(o.session, input, Buffer.alloc(16))));
  }
  return Buffer.concat(blocks);
}

function run(o: Open, message: ToHsm): Buffer | null {
  const input = Buffer.from(message.data ?? new Uint8Array(0));
  const aad = Buffer.from(message.aad ?? new Uint8Array(0));
  switch (message.op) {
    case 'wrap':
      return wrap(o, input, aad);
    case 'derive':
      return derive(o, input);
    case 'health':
      lib.C_GetSessionInfo(o.session);
      if (!selfTest(o)) throw new Error('the HSM self-test failed');
      return null;
    case 'unwrap':
      try {
        return unwrapOrThrow(o, input, aad);
      } catch (err) {
        if (selfTest(o)) return null;
        throw err;
      }
  }
}

function answer(message: ToHsm): FromHsm {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      open ??= reopen();
      const value = run(open, message);
      return { id: message.id, ok: true, value };
    } catch (err) {
      open = undefined;
      // Only a failure of a session that had worked is retried at once; a failed reopen is not.
      if (attempt === 0 && !(err instanceof Error && err.message.startsWith('the HSM failed moments ago'))) {
        lastReopen = 0;
        continue;
      }
      const what = err instanceof SettingError ? err.message : pkcs11Code(err);
      return { id: message.id, ok: false, kind: 'unavailable', message: `HSM ${message.op} failed: ${what}` };
    }
  }
  return { id: message.id, ok: false, kind: 'unavailable', message: 'HSM unavailable' };
}

try {
  const started = openSession(true);
  open = started.open;
  port.postMessage({
    id: 0,
    ok: true,
    keyObjectId: new Uint8Array(keyObjectId ?? Buffer.alloc(0)),
    created: started.created,
  } satisfies HsmReady);
} catch (err) {
  const failure: FromHsm =
    err instanceof SettingError
      ? { id: 0, ok: false, kind: 'setting', setting: err.setting, message: err.message }
      : { id: 0, ok: false, kind: 'unavailable', message: `the HSM failed at start: ${pkcs11Code(err)}` };
  port.postMessage(failure);
}

port.on('message', (message: ToHsm) => {
  port.postMessage(answer(message));
});
