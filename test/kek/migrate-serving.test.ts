import { readdir } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import {
  decryptAll,
  envelopeKekIds,
  fillStore,
  kekVersions,
  plaintextFound,
  traffic,
} from './rotate-support.js';
import { createSoftHsm, secretKeysOn, type SoftHsm } from './softhsm.js';
import { createWorld, startSession, TEST_DATABASE_URL, type KekWorld } from './support.js';

/**
 * Issue 16 item 3: `kek migrate --to pkcs11` while a local `serve` runs on the same store. The
 * server is given the pkcs11 settings beside `kek: local`, so it can load the HSM version the
 * migration records; no request fails, and afterwards it seals new keys in the HSM.
 */
const PIN = '864201';

const dialects = [
  { name: 'sqlite' as const, available: true },
  { name: 'postgres' as const, available: TEST_DATABASE_URL !== '' },
];

for (const dialect of dialects) {
  describe.skipIf(!dialect.available)(
    `kek migrate while serving (${dialect.name})`,
    { timeout: 240_000 },
    () => {
      let world: KekWorld | undefined;
      let hsm: SoftHsm | undefined;
      afterEach(async () => {
        await world?.cleanup();
        await hsm?.cleanup();
        world = undefined;
        hsm = undefined;
      });

      it('moves every key into the HSM while requests flow; the running server follows', async () => {
        hsm = await createSoftHsm();
        await hsm.initToken('tp-live', PIN);
        world = await createWorld(dialect.name);
        // kek stays local (master.key); the pkcs11 settings only let the server load the HSM version.
        const hsmSettings = { ...hsm.env('tp-live', PIN), TOKENPROXY_KEK: 'local' };
        const session = await startSession(world, hsmSettings);
        try {
          const filled = await fillStore(session, `live-${dialect.name}`);
          const [localId] = await envelopeKekIds(world);
          const flow = traffic(world, session, filled);
          const migrated = await runCli(
            ['kek', 'migrate', '--to', 'pkcs11', '--batch-size', '2', ...world.args],
            hsm.env('tp-live', PIN),
            180_000,
          );
          expect(migrated.stderr).toBe('');
          expect(migrated.code).toBe(0);
          const flowed = await flow.stop();
          expect(flowed.failures).toEqual([]);
          expect(flowed.ok).toBeGreaterThan(0);

          const [hsmKey] = await secretKeysOn(hsm, 'tp-live', PIN);
          const hsmId = hsmKey?.kekId ?? '';
          expect(await kekVersions(world)).toEqual([
            { id: localId, retired: true, provider: 'local' },
            { id: hsmId, retired: false, provider: 'pkcs11' },
          ]);
          expect(await envelopeKekIds(world)).toEqual([hsmId]);

          // The running server seals a new key in the HSM by itself.
          const after = await session.api('POST', '/v1/keys', {
            name: 'after',
            provider: 'openai',
            real_key: 'sk-live-after-real-provider-key',
          });
          expect(after.status).toBe(201);
          expect(await envelopeKekIds(world)).toEqual([hsmId]);
          const again = await traffic(world, session, filled).stop();
          expect(again.failures).toEqual([]);

          const all = [...filled.realKeys, 'sk-live-after-real-provider-key'].sort();
          expect(await decryptAll(world, hsm.env('tp-live', PIN))).toEqual(all);
          expect(await plaintextFound(world, all)).toEqual([]);
        } finally {
          await session.stop();
        }
        // Restarted as the docs say, with kek pkcs11: master.key can go.
        expect(await readdir(world.dataDir)).toContain('master.key');
      });
    },
  );
}
