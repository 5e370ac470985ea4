import { Worker } from 'node:worker_threads';
import { envName } from '../config/settings.js';
import { KekError } from './kek-error.js';
import {
  asBuffer,
  movable,
  pkcs11Fingerprint,
  TOKENPROXY_CKA_ID_PREFIX,
  type FromHsm,
  type HsmOp,
  type HsmReady,
  type Pkcs11Setting,
  type Pkcs11ThreadData,
  type ToHsm,
} from './pkcs11-protocol.js';
import { compiledThread } from '../runtime/compiled-thread.js';
import { VaultError, type KeyEncryptionKey } from './vault.js';

/**
 * The `pkcs11` KEK provider (DESIGN §8): an AES-256 key inside an HSM, reached through a PKCS#11
 * library in a thread of its own (pkcs11-thread.ts). Data keys are wrapped with AES-GCM inside the
 * HSM; the KEK never leaves it. An HSM that fails answers VaultError('kek_unavailable'), and the
 * thread reopens the library by itself once the HSM is back.
 */

export interface Pkcs11Options {
  readonly module: string;
  readonly tokenLabel: string;
  readonly pin: string;
  readonly keyLabel: string;
  /** Create the KEK when no key has the label (serve, `kek migrate`); false for checks. */
  readonly create: boolean;
  /** A request the HSM has not answered after this long fails as kek_unavailable. */
  readonly timeoutMs?: number;
}

export interface Pkcs11Kek extends KeyEncryptionKey {
  /** True when the KEK object was created by this start. */
  readonly created: boolean;
  /**
   * True when a tokenproxy store created the KEK object (its CKA_ID says so), false for a key made
   * by the HSM's own tools (or by a tokenproxy before keys were marked).
   */
  readonly madeByTokenproxy: boolean;
  /** Resolves true when the HSM answers a round trip now (for /readyz). */
  healthy(): Promise<boolean>;
  /** Stops the HSM thread: every version's KEK of this module goes with it. */
  close(): Promise<void>;
  /** Another version among the keys labelled for this store (`kek rotate`), or undefined. */
  load(kekId: string): Promise<KeyEncryptionKey | undefined>;
  /** The next version's key (labelled `<key label>.next`), created the first time. */
  generateNext(): Promise<KeyEncryptionKey>;
  /** Deletes a version's key object from the HSM (a version already gone is fine). */
  destroy(kekId: string): Promise<void>;
  /** Gives a version's key the configured label (the end of a rotation). */
  promote(kekId: string): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 10_000;

export async function openPkcs11Kek(options: Pkcs11Options): Promise<Pkcs11Kek> {
  const data: Pkcs11ThreadData = {
    module: options.module,
    tokenLabel: options.tokenLabel,
    pin: options.pin,
    keyLabel: options.keyLabel,
    create: options.create,
  };
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const worker = new Worker(compiledThread(import.meta.url, 'vault/pkcs11-thread.js', 'the PKCS#11 KEK'), {
    workerData: data,
  });
  const pending = new Map<number, { resolve: (m: FromHsm) => void; timer: NodeJS.Timeout }>();
  let nextId = 1;
  let exited = false;

  const ready = await new Promise<HsmReady>((resolve, reject) => {
    const onMessage = (message: FromHsm | HsmReady) => {
      if (message.id !== 0) return;
      worker.off('message', onMessage);
      if (message.ok) resolve(message as HsmReady);
      else if (message.kind === 'setting') reject(settingError(message.setting, message.message));
      else reject(new KekError('pkcs11_module', `${message.message}. Check that the HSM is reachable.`));
    };
    worker.on('message', onMessage);
    worker.once('error', (err) =>
      reject(new KekError('pkcs11_module', `the PKCS#11 thread failed at start: ${err.message}`)),
    );
  }).catch(async (err: unknown) => {
    await worker.terminate();
    throw err;
  });

  worker.on('message', (message: FromHsm) => {
    const waiting = pending.get(message.id);
    if (waiting === undefined) {
      // An answer after its call timed out: nobody takes the data key it may hold.
      if (message.ok) message.value?.fill(0);
      return;
    }
    pending.delete(message.id);
    clearTimeout(waiting.timer);
    waiting.resolve(message);
  });
  worker.on('error', () => undefined);
  worker.once('exit', () => {
    exited = true;
    for (const [id, waiting] of pending) {
      clearTimeout(waiting.timer);
      waiting.resolve({ id, ok: false, kind: 'unavailable', message: 'the PKCS#11 thread stopped' });
    }
    pending.clear();
  });
  // The thread must not keep a finished process alive; requests in flight hold it by their timers.
  worker.unref();

  const call = async (
    op: HsmOp,
    kek: string | undefined,
    input?: Buffer,
    aad?: Buffer,
  ): Promise<Buffer | null> => {
    if (exited) throw new VaultError('kek_unavailable', 'the PKCS#11 thread stopped');
    const id = nextId++;
    const message: FromHsm = await new Promise((resolve) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        resolve({
          id,
          ok: false,
          kind: 'unavailable',
          message: `the HSM did not answer within ${timeoutMs} ms`,
        });
      }, timeoutMs);
      pending.set(id, { resolve, timer });
      // Both moved in buffers of their own: posting a view copies its whole ArrayBuffer, and the
      // AAD's is a slice of Node's shared pool, which holds other requests' key material.
      const data = input === undefined ? undefined : movable(input);
      const ownAad = aad === undefined ? undefined : movable(aad);
      const moved = [data, ownAad].flatMap((bytes) => (bytes === undefined ? [] : [bytes.buffer]));
      worker.postMessage({ id, op, kek, data, aad: ownAad } satisfies ToHsm, moved);
    });
    // The answer's bytes were moved here, not copied: the caller zeroes a data key in place.
    if (message.ok) return message.value === null ? null : asBuffer(message.value);
    throw new VaultError('kek_unavailable', message.message);
  };

  /** One KEK version's operations, all through the one thread. */
  const version = (ckaId: Uint8Array): KeyEncryptionKey & { healthy(): Promise<boolean> } => {
    const fingerprint = pkcs11Fingerprint(ckaId);
    const kek = fingerprint.toString('hex');
    return {
      fingerprint,
      async wrap(dek, aad) {
        const out = await call('wrap', kek, dek, aad);
        if (out === null) throw new VaultError('kek_unavailable', 'the HSM returned nothing for a wrap');
        return out;
      },
      async unwrap(wrapped, aad) {
        return (await call('unwrap', kek, wrapped, aad)) ?? undefined;
      },
      async deriveKey(purpose) {
        const out = await call('derive', kek, Buffer.from(`tokenproxy:${purpose}`, 'utf8'));
        if (out === null)
          throw new VaultError('kek_unavailable', 'the HSM returned nothing for a derivation');
        return out;
      },
      async healthy() {
        try {
          await call('health', kek);
          return true;
        } catch {
          return false;
        }
      },
    };
  };

  return {
    ...version(ready.keyObjectId),
    created: ready.created,
    madeByTokenproxy: Buffer.from(ready.keyObjectId)
      .subarray(0, TOKENPROXY_CKA_ID_PREFIX.length)
      .equals(TOKENPROXY_CKA_ID_PREFIX),
    async close() {
      await worker.terminate();
    },
    async load(kekId) {
      const ckaId = await call('load', kekId);
      return ckaId === null ? undefined : version(ckaId);
    },
    async generateNext() {
      const ckaId = await call('generate', undefined);
      if (ckaId === null) throw new VaultError('kek_unavailable', 'the HSM returned no key id');
      return version(ckaId);
    },
    async destroy(kekId) {
      await call('destroy', kekId);
    },
    async promote(kekId) {
      await call('promote', kekId);
    },
  };
}

function settingError(setting: Pkcs11Setting, message: string): KekError {
  return new KekError(setting, `Setting "${setting}" (${envName(setting)}): ${message}.`);
}
