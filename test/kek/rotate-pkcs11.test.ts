import { readdir } from 'node:fs/promises';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import {
  decryptAll,
  envelopeKekIds,
  fillStore,
  kekVersions,
  killedAfterBatches,
  plaintextFound,
  traffic,
} from './rotate-support.js';
import { createSoftHsm, secretKeysOn, type SoftHsm } from './softhsm.js';
import { createWorld, startSession, TEST_DATABASE_URL, type KekWorld } from './support.js';

/**
 * Issue 16 item 3: `tokenproxy kek rotate` with the KEK in SoftHSM2, while `serve` (its own HSM
 * session in another process) keeps proxying; killed midway and run again.
 */
const PIN = '975310';

const dialects = [
  { name: 'sqlite' as const, available: true },
  { name: 'postgres' as const, available: TEST_DATABASE_URL !== '' },
];

for (const dialect of dialects) {
  describe.skipIf(!dialect.available)(
    `kek rotate, pkcs11 KEK (${dialect.name})`,
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

      it.skipIf(dialect.name !== 'sqlite')(
        'an HSM away and back while a rotation is half done: the server loads the new version by itself',
        async () => {
          hsm = await createSoftHsm();
          await hsm.initToken('tp-away', PIN);
          world = await createWorld(dialect.name);
          const env = hsm.env('tp-away', PIN);
          const session = await startSession(world, env);
          try {
            const filled = await fillStore(session, `away-${dialect.name}`);
            await killedAfterBatches(
              ['rotate', '--batch-size', '1', ...world.args],
              env,
              /rewrapped \d+ envelopes/,
              3,
            );
            // Away at once, for longer than the server's background look at the store's versions (5 s):
            // it never held the new version before the HSM went.
            await hsm.unplug();
            await new Promise((resolve) => setTimeout(resolve, 6_000));
            await hsm.replug();
            const ready = async () =>
              (await request(`${session.server.apiUrl}/readyz`, { dispatcher: session.dispatcher }))
                .statusCode;
            let status = 0;
            for (let i = 0; i < 60 && status !== 200; i++) {
              await new Promise((resolve) => setTimeout(resolve, 250));
              status = await ready();
            }
            expect(status).toBe(200);
            for (const { token, realKey } of filled.tokens) {
              const proxied = await session.proxy(token);
              expect(proxied.status).toBe(200);
              expect(world.mock.received.at(-1)?.headers.authorization).toBe(`Bearer ${realKey}`);
            }
          } finally {
            await session.stop();
          }
        },
      );

      it('rotates inside the HSM while requests flow, resumes after kill -9, destroys the old key object', async () => {
        hsm = await createSoftHsm();
        await hsm.initToken('tp-rotate', PIN);
        world = await createWorld(dialect.name);
        const env = hsm.env('tp-rotate', PIN);
        const session = await startSession(world, env);
        try {
          const filled = await fillStore(session, `hsm-${dialect.name}`);
          const [oldId] = await envelopeKekIds(world);
          expect(await secretKeysOn(hsm, 'tp-rotate', PIN)).toEqual([
            { label: 'tokenproxy-kek', kekId: oldId },
          ]);
          const flow = traffic(world, session, filled);

          const first = await killedAfterBatches(
            ['rotate', '--batch-size', '1', ...world.args],
            env,
            /rewrapped \d+ envelopes/,
            3,
          );
          expect(first).toContain('rewrapped 3 envelopes');
          expect(first).not.toContain('Done');
          const halfway = await kekVersions(world);
          const newId = halfway[1]?.id ?? '';
          expect(halfway).toEqual([
            { id: oldId, retired: false, provider: 'pkcs11' },
            { id: newId, retired: false, provider: 'pkcs11' },
          ]);
          // The next version is a key object of its own beside the old one until the rotation ends.
          expect(await secretKeysOn(hsm, 'tp-rotate', PIN)).toEqual([
            { label: 'tokenproxy-kek', kekId: oldId },
            { label: 'tokenproxy-kek.next', kekId: newId },
          ]);

          const rerun = await runCli(['kek', 'rotate', '--batch-size', '2', ...world.args], env, 180_000);
          expect(rerun.stderr).toBe('');
          expect(rerun.code).toBe(0);
          expect(rerun.stdout).toContain('an interrupted rotation finished');
          expect(rerun.stdout).not.toContain(PIN);
          const flowed = await flow.stop();
          expect(flowed.failures).toEqual([]);
          expect(flowed.ok).toBeGreaterThan(0);

          expect(await kekVersions(world)).toEqual([
            { id: oldId, retired: true, provider: 'pkcs11' },
            { id: newId, retired: false, provider: 'pkcs11' },
          ]);
          expect(await envelopeKekIds(world)).toEqual([newId]);
          // The old key object is destroyed and the new one carries the configured label.
          expect(await secretKeysOn(hsm, 'tp-rotate', PIN)).toEqual([
            { label: 'tokenproxy-kek', kekId: newId },
          ]);

          // The running server seals new keys under the new version and proxies with them.
          const after = await session.api('POST', '/v1/keys', {
            name: 'after',
            provider: 'openai',
            real_key: 'sk-hsm-after-real-provider-key',
          });
          expect(after.status).toBe(201);
          expect(await envelopeKekIds(world)).toEqual([newId]);
          const again = traffic(world, session, filled);
          const flowedAgain = await again.stop();
          expect(flowedAgain.failures).toEqual([]);

          const all = [...filled.realKeys, 'sk-hsm-after-real-provider-key'].sort();
          expect(await decryptAll(world, env)).toEqual(all);
          expect(await plaintextFound(world, all)).toEqual([]);
          expect(await readdir(world.dataDir)).not.toContain('master.key');
        } finally {
          await session.stop();
        }
        // A fresh start finds the new version by the configured label.
        const restarted = await startSession(world, env, session.apiKey);
        try {
          const keys = await restarted.api('GET', '/v1/keys?limit=100');
          expect(keys.status).toBe(200);
        } finally {
          await restarted.stop();
        }
      });
    },
  );
}
