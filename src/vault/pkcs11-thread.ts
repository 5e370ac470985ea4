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
import {
  nextKeyLabel,
  pkcs11Fingerprint,
  type FromHsm,
  type HsmReady,
  type Pkcs11Setting,
  type Pkcs11ThreadData,
  type ToHsm,
} from './pkcs11-protocol.js';

const data = workerData as Pkcs11ThreadData;
const port = parentPort;
if (port === null) throw new Error('pkcs11-thread runs only as a worker thread');

const TAG_BITS = 128;
const NONCE_LEN = 12;
/** After a reopen failed, the library is re-initialised at most this often, however many requests wait. */
const REOPEN_EVERY_MS = 1000;

class SettingError extends Error {
  constructor(
    readonly setting: Pkcs11Setting,
    message: string,
  ) {
    super(message);
  }
}

const lib = new pkcs11js.PKCS11();
let loaded = false;
let initialized = false;
let session: Buffer | undefined;
let lastReopen = 0;

/**
 * The KEK versions this thread uses, by KEK id (hex). Object handles do not survive a re-initialised
 * library, so each version is kept by its CKA_ID and its handle looked up again when needed.
 */
const keys = new Map<string, { readonly ckaId: Buffer; handle: Buffer | undefined }>();
let primaryId = '';

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
    // KEK id (the envelope fingerprint) is made of.
    { type: pkcs11js.CKA_ID, value: randomBytes(16) },
  ]);
}

function ckaIdOf(s: Buffer, key: Buffer, label: string): Buffer {
  const [id] = lib.C_GetAttributeValue(s, key, [{ type: pkcs11js.CKA_ID }]);
  const value = id?.value;
  if (!Buffer.isBuffer(value) || value.length === 0) {
    throw new SettingError(
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

/** Loads the library (once), initialises it, opens a session and logs in. */
function openSession(): Buffer {
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
  const s = lib.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
  try {
    lib.C_Login(s, pkcs11js.CKU_USER, data.pin);
  } catch (err) {
    const code = pkcs11Code(err);
    if (code !== 'CKR_USER_ALREADY_LOGGED_IN') {
      try {
        lib.C_CloseSession(s);
      } catch {
        // The session is being abandoned anyway.
      }
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
  return s;
}

/**
 * The start: finds the KEK by its label (or, after a rotation stopped between destroying the old
 * version and relabelling the new, by the next version's label), creating it when allowed.
 */
function start(): { created: boolean } {
  const s = openSession();
  session = s;
  const labelled = byLabel(s, data.keyLabel);
  if (labelled.length > 1) {
    throw new SettingError(
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
      throw new SettingError(
        'pkcs11_key_label',
        `no key labelled "${data.keyLabel}" on the token "${data.tokenLabel}"`,
      );
    }
    key = createKey(s, data.keyLabel);
    created = true;
  }
  primaryId = remember(s, key, label);
  return { created };
}

/**
 * After an HSM error, sessions may be dead and (SoftHSM2) the library may not see a restored token
 * until it is finalized and initialized again: so everything is reopened from scratch.
 */
function reopen(): Buffer {
  if (initialized) {
    try {
      lib.C_Finalize();
    } catch {
      // Finalizing a library in trouble may fail; initializing again is what matters.
    }
    initialized = false;
  }
  for (const entry of keys.values()) entry.handle = undefined;
  return openSession();
}

/** The object handle of a KEK version, looked up by CKA_ID after a reopen. */
function keyHandle(s: Buffer, kekId: string): Buffer {
  const entry = keys.get(kekId);
  if (entry === undefined) throw new Error(`KEK ${kekId} is not loaded in this process`);
  if (entry.handle === undefined) {
    const [found] = findKeys(s, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
      { type: pkcs11js.CKA_ID, value: entry.ckaId },
    ]);
    if (found === undefined) throw new Error(`the HSM no longer holds KEK ${kekId}`);
    entry.handle = found;
  }
  return entry.handle;
}

/** Finds the version `kekId` among the keys labelled for this store (current and next). */
function load(s: Buffer, kekId: string): Buffer | null {
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
}

function generate(s: Buffer): Buffer {
  const label = nextKeyLabel(data.keyLabel);
  const existing = byLabel(s, label);
  if (existing.length > 1) throw new Error(`more than one key on the token has the label "${label}"`);
  const key = existing[0] ?? createKey(s, label);
  const kekId = remember(s, key, label);
  return Buffer.from(keys.get(kekId)?.ckaId ?? Buffer.alloc(0));
}

function destroy(s: Buffer, kekId: string): null {
  const entry = keys.get(kekId);
  if (entry === undefined) return null;
  let handle: Buffer | undefined;
  try {
    handle = keyHandle(s, kekId);
  } catch {
    // Already destroyed (a rotation run again after it got this far).
  }
  if (handle !== undefined) lib.C_DestroyObject(s, handle);
  keys.delete(kekId);
  return null;
}

function promote(s: Buffer, kekId: string): null {
  lib.C_SetAttributeValue(s, keyHandle(s, kekId), [{ type: pkcs11js.CKA_LABEL, value: data.keyLabel }]);
  return null;
}

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

/** CMAC in counter mode (NIST SP 800-108): 32 bytes for `purpose`, derived inside the HSM. */
function derive(s: Buffer, key: Buffer, purpose: Buffer): Buffer {
  const blocks: Buffer[] = [];
  for (const counter of [1, 2]) {
    lib.C_SignInit(s, { mechanism: pkcs11js.CKM_AES_CMAC }, key);
    const input = Buffer.concat([Buffer.from([counter]), purpose, Buffer.from([0, 0, 1, 0])]);
    blocks.push(Buffer.from(lib.C_Sign(s, input, Buffer.alloc(16))));
  }
  return Buffer.concat(blocks);
}

function run(s: Buffer, message: ToHsm): Buffer | null {
  const input = Buffer.from(message.data ?? new Uint8Array(0));
  const aad = Buffer.from(message.aad ?? new Uint8Array(0));
  const kekId = message.kek ?? primaryId;
  switch (message.op) {
    case 'load':
      return load(s, kekId);
    case 'generate':
      return generate(s);
    case 'destroy':
      return destroy(s, kekId);
    case 'promote':
      return promote(s, kekId);
    case 'wrap':
      return wrap(s, keyHandle(s, kekId), input, aad);
    case 'derive':
      return derive(s, keyHandle(s, kekId), input);
    case 'health':
      lib.C_GetSessionInfo(s);
      if (!selfTest(s, keyHandle(s, kekId))) throw new Error('the HSM self-test failed');
      return null;
    case 'unwrap': {
      const key = keyHandle(s, kekId);
      try {
        return unwrapOrThrow(s, key, input, aad);
      } catch (err) {
        if (selfTest(s, key)) return null;
        throw err;
      }
    }
  }
}

/** Blocks this thread (never the event loop): a short pause before trying the HSM again. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Runs one request. A failure of a session that had worked is retried on a reopened library, a few
 * times over ~100 ms: another process changing the token (a `kek rotate` destroying or relabelling
 * a key) can make one read fail. Only a reopen that fails marks the HSM down, and then requests fail
 * at once until REOPEN_EVERY_MS has passed, however many wait.
 */
function answer(message: ToHsm): FromHsm {
  let failure = 'HSM unavailable';
  for (let attempt = 0; attempt < 3; attempt++) {
    if (session === undefined) {
      if (Date.now() - lastReopen < REOPEN_EVERY_MS) {
        return unavailable(message, 'the HSM failed moments ago; not retried yet');
      }
      try {
        session = reopen();
      } catch (err) {
        lastReopen = Date.now();
        return unavailable(message, describe(err));
      }
    }
    try {
      return { id: message.id, ok: true, value: run(session, message) };
    } catch (err) {
      session = undefined;
      failure = describe(err);
      if (attempt < 2) pause(attempt === 0 ? 10 : 90);
    }
  }
  return unavailable(message, failure);
}

function describe(err: unknown): string {
  return err instanceof SettingError || (err instanceof Error && err.message.includes('KEK'))
    ? err.message
    : pkcs11Code(err);
}

function unavailable(message: ToHsm, what: string): FromHsm {
  return { id: message.id, ok: false, kind: 'unavailable', message: `HSM ${message.op} failed: ${what}` };
}

try {
  const started = start();
  port.postMessage({
    id: 0,
    ok: true,
    keyObjectId: new Uint8Array(keys.get(primaryId)?.ckaId ?? Buffer.alloc(0)),
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
