import { randomBytes } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { openPkcs11Kek, type Pkcs11Kek } from '../../src/vault/pkcs11-kek.js';
import { churnToken, createSoftHsm, SOFTHSM_MODULE, type SoftHsm } from './softhsm.js';

/**
 * The HSM thread's unwrap while another process changes the token (a `kek rotate` destroying the
 * old version): SoftHSM2 then fails a sound key's operation now and then. A CI run once turned
 * such a glitch into "tampered" (a 500 on a good request) because the self-test after it passed.
 */
const PIN = '135792';
const CHURN_MS = 6000;
/** Rounds the churn makes at least, however loaded the machine (within CHURN_MAX_MS). */
const MIN_ROUNDS = 100;
const CHURN_MAX_MS = 25_000;

let hsm: SoftHsm | undefined;
let kek: Pkcs11Kek | undefined;
afterEach(async () => {
  await kek?.close();
  await hsm?.cleanup();
  kek = undefined;
  hsm = undefined;
});

it('opens every envelope while another process rewrites the KEK object and destroys others, and still refuses a tampered one', async () => {
  hsm = await createSoftHsm();
  await hsm.initToken('tp-churn', PIN);
  // SoftHSM2 reads its configuration when the HSM thread initialises the library in this process.
  process.env.SOFTHSM2_CONF = hsm.conf;
  const hsmKek = await openPkcs11Kek({
    module: SOFTHSM_MODULE,
    tokenLabel: 'tp-churn',
    pin: PIN,
    keyLabel: 'tokenproxy-kek',
    create: true,
  });
  kek = hsmKek;
  const dek = randomBytes(32);
  const aad = Buffer.from('tokenproxy/test/churn');
  const wrapped = await hsmKek.wrap(dek, aad);
  const tampered = Buffer.from(wrapped);
  tampered[tampered.length - 1] = (tampered[tampered.length - 1] ?? 0) ^ 1;

  let churning = true;
  // Spare keys labelled as a next version, so the thread's look-ups for a version meet the objects
  // destroyed; the KEK itself rewritten as a rotation's promotion rewrites the new version's key.
  const churn = churnToken(hsm, 'tp-churn', PIN, {
    spareLabel: 'tokenproxy-kek.next',
    touchLabel: 'tokenproxy-kek',
    ms: CHURN_MS,
    minRounds: MIN_ROUNDS,
    maxMs: CHURN_MAX_MS,
  }).finally(() => {
    churning = false;
  });
  const failures: string[] = [];
  let opened = 0;
  let refused = 0;
  while (churning) {
    // Many at once, so the thread works through them back to back while the token changes.
    const outs = await Promise.all(
      Array.from({ length: 50 }, () => hsmKek.unwrap(wrapped, aad).catch((err: unknown) => err)),
    );
    for (const out of outs) {
      if (out instanceof Buffer && out.equals(dek)) opened++;
      else if (out instanceof Error) failures.push(out.message);
      else failures.push(out === undefined ? 'a sound envelope did not authenticate' : 'a wrong DEK');
    }
    const out = await hsmKek.unwrap(tampered, aad).catch((err: unknown) => err);
    if (out === undefined) refused++;
    else failures.push(`a tampered envelope gave ${out instanceof Error ? out.message : 'a DEK'}`);
    // What a server does when an envelope names a version it does not hold: it looks among the
    // labelled keys, and so holds handles of objects the other process destroys.
    const other = await hsmKek.load('00000000000000ff').catch((err: unknown) => err);
    if (other instanceof Error) failures.push(`loading an unknown version failed: ${other.message}`);
    else if (other !== undefined) failures.push('an unknown version was found');
  }
  const rounds = await churn;

  expect(failures).toEqual([]);
  expect(rounds).toBeGreaterThanOrEqual(MIN_ROUNDS);
  expect(opened).toBeGreaterThan(1000);
  expect(refused).toBeGreaterThan(50);
}, 45_000);
