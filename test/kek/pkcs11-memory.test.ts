import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { afterEach, expect, it, vi } from 'vitest';
import { openPkcs11Kek, type Pkcs11Kek } from '../../src/vault/pkcs11-kek.js';
import { createEnvelopeVault } from '../../src/vault/vault.js';
import { createSoftHsm, SOFTHSM_MODULE, type SoftHsm } from './softhsm.js';

/**
 * A data key crossing to and from the HSM thread is moved, not copied: postMessage's structured
 * clone would otherwise leave a copy in each thread that only the collector frees, unzeroed, long
 * after the vault zeroed its own (a heap dump and the stored envelope would then give the real key).
 */
const PIN = '975310';

let hsm: SoftHsm | undefined;
let kek: Pkcs11Kek | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await kek?.close();
  await hsm?.cleanup();
  kek = undefined;
  hsm = undefined;
});

const allZero = (bytes: Uint8Array): boolean => bytes.every((b) => b === 0);

it('the data key sent to the HSM thread and the one it answers leave no copy in the main thread', async () => {
  hsm = await createSoftHsm();
  await hsm.initToken('tp-memory', PIN);
  process.env.SOFTHSM2_CONF = hsm.conf;
  kek = await openPkcs11Kek({
    module: SOFTHSM_MODULE,
    tokenLabel: 'tp-memory',
    pin: PIN,
    keyLabel: 'tokenproxy-kek',
    create: true,
  });
  // Spies that call through: they only record what crossed between the threads.
  const posted = vi.spyOn(Worker.prototype, 'postMessage');
  const emitted = vi.spyOn(Worker.prototype, 'emit');
  // The data and the AAD of each message: a view posted without transfer would carry its whole
  // ArrayBuffer along (for a pooled AAD, Node's shared pool with other requests' key material).
  const sent = (): Uint8Array[] =>
    posted.mock.calls.flatMap(([message]) => {
      const { data, aad } = message as { data?: unknown; aad?: unknown };
      return [data, aad].filter((bytes): bytes is Uint8Array => bytes instanceof Uint8Array);
    });
  const received = (): Uint8Array[] =>
    emitted.mock.calls.flatMap(([event, message]) => {
      const value = (message as { value?: unknown } | undefined)?.value;
      return event === 'message' && value instanceof Uint8Array ? [value] : [];
    });

  const vault = createEnvelopeVault(kek);
  const binding = { keyId: 'key_memory', accountId: 'acct_memory' };
  const realKey = Buffer.from(`sk-memory-${randomBytes(8).toString('hex')}`);
  const envelope = await vault.encrypt(realKey, binding);
  // The DEK went to the thread for its wrap: what was posted is emptied (moved), not left behind.
  expect(sent().length).toBeGreaterThan(0);
  for (const data of sent()) expect(data.byteLength, 'a posted buffer still holds its bytes').toBe(0);

  const before = received().length;
  const plaintext = await vault.decrypt(envelope, binding);
  expect(plaintext.equals(realKey)).toBe(true);
  plaintext.fill(0);
  // The unwrapped DEK arrived in the very memory the vault zeroed after using it.
  const deks = received()
    .slice(before)
    .filter((value) => value.byteLength === 32);
  expect(deks).toHaveLength(1);
  expect(
    allZero(deks[0] as Uint8Array),
    'the data key is still readable in the message from the HSM thread',
  ).toBe(true);

  // The thread still answers correctly afterwards, and a tampered envelope is still refused.
  const again = await vault.decrypt(envelope, binding);
  expect(again.equals(realKey)).toBe(true);
  const tampered = Buffer.from(envelope);
  tampered[tampered.length - 1] = (tampered[tampered.length - 1] ?? 0) ^ 1;
  await expect(vault.decrypt(tampered, binding)).rejects.toThrow(/authentication/);
});
