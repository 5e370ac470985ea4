/**
 * The HSM thread of the `pkcs11` KEK (DESIGN §8). pkcs11js calls are synchronous and an HSM may take
 * milliseconds (or hang): here they block only this thread, never the proxy's event loop. One
 * thread, one session: PKCS#11 initialisation is per process, so a second thread's C_Finalize
 * (needed to see a token again after SoftHSM2 lost it) would pull the sessions from under the first.
 * Started by pkcs11-kek.ts, never imported.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createHsmCrypto, isObjectGlitch } from './pkcs11-crypto.js';
import { KekError } from './kek-error.js';
import { describeHsmFailure } from './pkcs11-errors.js';
import { createHsmKeys } from './pkcs11-keys.js';
import {
  asBuffer,
  isPkcs11Setting,
  movable,
  type FromHsm,
  type HsmOp,
  type HsmReady,
  type Pkcs11ThreadData,
  type ToHsm,
} from './pkcs11-protocol.js';
import { createHsmSession, pause } from './pkcs11-session.js';

const data = workerData as Pkcs11ThreadData;
const port = parentPort;
if (port === null) throw new Error('pkcs11-thread runs only as a worker thread');

/** After a reopen failed, the library is re-initialised at most this often, however many requests wait. */
const REOPEN_EVERY_MS = 1000;

const hsm = createHsmSession(data);
const keys = createHsmKeys(hsm.lib, data);
const hsmCrypto = createHsmCrypto(hsm.lib);
let session: Buffer | undefined;
/** performance.now() of the last failed reopen (monotonic: a wall clock step must not stretch the pause). */
let lastReopen = Number.NEGATIVE_INFINITY;
/**
 * Per KEK id the store names but the HSM did not show: when it may be looked for again on a
 * re-initialised library, and the wait after that (see `load`).
 */
const freshLooks = new Map<string, { at: number; waitMs: number }>();
const FRESH_LOOK_MAX_MS = 60_000;

function reopen(): Buffer {
  keys.forgetHandles();
  return hsm.reopen();
}

/**
 * A KEK version the store names (the keyring asks only for pkcs11 ones). A miss is looked at again
 * on a re-initialised library, after a wait per version that doubles: a SoftHSM2 library initialised before
 * the token went away and came back keeps answering from its old view, without an error that would
 * reopen it, so a version made meanwhile (a `kek rotate` in another process) stayed unseen and the
 * server answered 503 until restarted.
 */
function load(s: Buffer, kekId: string): Buffer | null {
  const found = keys.load(s, kekId);
  if (found !== null) {
    freshLooks.delete(kekId);
    return found;
  }
  // Re-initialising stalls every other operation of this thread: a version that is truly absent is
  // looked for again after 1 s, then 2, 4… up to a minute, not on every refresh of the keyring.
  const last = freshLooks.get(kekId);
  if (last !== undefined && performance.now() < last.at) return null;
  const waitMs = last === undefined ? REOPEN_EVERY_MS : Math.min(last.waitMs * 2, FRESH_LOOK_MAX_MS);
  freshLooks.set(kekId, { at: performance.now() + waitMs, waitMs });
  session = undefined;
  const fresh = reopen();
  session = fresh;
  const again = keys.load(fresh, kekId);
  if (again !== null) freshLooks.delete(kekId);
  return again;
}

function run(s: Buffer, message: ToHsm): Buffer | null {
  // A view, not a copy: the message's own bytes (a data key, for a wrap) are zeroed once answered.
  const input = asBuffer(message.data ?? new Uint8Array(0));
  const aad = asBuffer(message.aad ?? new Uint8Array(0));
  const kekId = message.kek ?? keys.primaryId();
  switch (message.op) {
    case 'load':
      return load(s, kekId);
    case 'generate':
      return keys.generate(s);
    case 'destroy':
      return keys.destroy(s, kekId);
    case 'promote':
      return keys.promote(s, kekId);
    case 'wrap':
      return hsmCrypto.wrap(s, keys.handle(s, kekId), input, aad);
    case 'derive':
      return hsmCrypto.derive(s, keys.handle(s, kekId), input);
    case 'health':
      hsm.lib.C_GetSessionInfo(s);
      if (!hsmCrypto.selfTest(s, keys.handle(s, kekId))) throw new Error('the HSM self-test failed');
      return null;
    case 'unwrap':
      return hsmCrypto.unwrap(s, keys.handle(s, kekId), input, aad);
  }
}

/**
 * Pauses before each retry of an object glitch on the same session: ~300 ms in all, longer than
 * SoftHSM2 takes to rewrite an object file, however often another process does it.
 */
const GLITCH_PAUSES_MS = [2, 5, 10, 20, 40, 60, 80, 80];

/**
 * Runs one request. A failure of a session that had worked is retried: an object glitch on the same
 * session, up to GLITCH_PAUSES_MS.length times (a reopen would look the key up again just as its
 * object may be unreadable); any other failure, or glitches past that, twice more over ~100 ms on a
 * reopened library. Another process changing the token (a `kek rotate` destroying or relabelling a
 * key) can make reads fail for a moment. Only a reopen that fails marks the HSM down, and then
 * requests fail at once until REOPEN_EVERY_MS has passed, however many wait.
 */
function answer(message: ToHsm): FromHsm {
  let failure = 'HSM unavailable';
  let glitches = 0;
  let attempt = 0;
  while (attempt < 3) {
    if (session === undefined) {
      if (performance.now() - lastReopen < REOPEN_EVERY_MS) {
        return unavailable(message, 'the HSM failed moments ago; not retried yet');
      }
      try {
        session = reopen();
      } catch (err) {
        lastReopen = performance.now();
        return unavailable(message, describeHsmFailure(err));
      }
    }
    try {
      return { id: message.id, ok: true, value: answerBytes(run(session, message), message.op) };
    } catch (err) {
      failure = describeHsmFailure(err);
      const pauseMs = isObjectGlitch(err) ? GLITCH_PAUSES_MS[glitches++] : undefined;
      if (pauseMs !== undefined) {
        pause(pauseMs);
        continue;
      }
      session = undefined;
      if (attempt < 2) pause(attempt === 0 ? 10 : 90);
      attempt++;
    }
  }
  return unavailable(message, failure);
}

/** The operations whose input or answer is a data key or a key derived from the KEK. */
const SECRET_OPS: ReadonlySet<HsmOp> = new Set(['wrap', 'unwrap', 'derive']);

/**
 * The answer in an ArrayBuffer of its own, moved to the main thread rather than copied; a secret
 * operation's own output is zeroed here, so the data key (or derived key) is left in no buffer of
 * this thread.
 */
function answerBytes(out: Buffer | null, op: HsmOp): Uint8Array<ArrayBuffer> | null {
  if (out === null) return null;
  const own = movable(out);
  if (SECRET_OPS.has(op)) out.fill(0);
  return own;
}

function unavailable(message: ToHsm, what: string): FromHsm {
  return { id: message.id, ok: false, kind: 'unavailable', message: `HSM ${message.op} failed: ${what}` };
}

try {
  session = hsm.open();
  const started = keys.start(session);
  port.postMessage({
    id: 0,
    ok: true,
    keyObjectId: new Uint8Array(started.keyObjectId),
    created: started.created,
  } satisfies HsmReady);
} catch (err) {
  // A class does not survive postMessage: the setting crosses as data, and pkcs11-kek.ts makes the
  // KekError again.
  const failure: FromHsm =
    err instanceof KekError && isPkcs11Setting(err.setting)
      ? { id: 0, ok: false, kind: 'setting', setting: err.setting, message: err.message }
      : {
          id: 0,
          ok: false,
          kind: 'unavailable',
          message: `the HSM failed at start: ${describeHsmFailure(err)}`,
        };
  port.postMessage(failure);
}

port.on('message', (message: ToHsm) => {
  const reply = answer(message);
  message.data?.fill(0);
  if (reply.ok && reply.value !== null) port.postMessage(reply, [reply.value.buffer]);
  else port.postMessage(reply);
});
