import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { filesUnder } from '../support/files.js';
import { createSoftHsm, type SoftHsm } from './softhsm.js';
import {
  createToken,
  createWorld,
  startSession,
  storeSnapshot,
  TEST_DATABASE_URL,
  type KekWorld,
} from './support.js';

/** Issue 16: `kek: "pkcs11"` with SoftHSM2, the real binary, and the mock provider. */
const PIN = '246810';
const REAL_KEY = `sk-hsm-${Date.now()}-real-provider-key`;

const dialects = [
  { name: 'sqlite' as const, available: true },
  { name: 'postgres' as const, available: TEST_DATABASE_URL !== '' },
];

for (const dialect of dialects) {
  describe.skipIf(!dialect.available)(
    `the pkcs11 KEK with SoftHSM2 (${dialect.name})`,
    { timeout: 180_000 },
    () => {
      let world: KekWorld | undefined;
      let hsm: SoftHsm | undefined;
      afterEach(async () => {
        await world?.cleanup();
        await hsm?.cleanup();
        world = undefined;
        hsm = undefined;
      });

      it('creates the KEK in the token, proxies with it across a restart, keeps no key material in the data dir', async () => {
        hsm = await createSoftHsm();
        await hsm.initToken('tp-main', PIN);
        world = await createWorld(dialect.name);
        const env = hsm.env('tp-main', PIN);
        const first = await startSession(world, env);
        const { token } = await createToken(first, REAL_KEY);
        expect((await first.proxy(token)).status).toBe(200);
        expect(world.mock.received.at(-1)?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
        expect(first.server.stderr()).not.toContain(PIN);
        expect(first.server.stdout()).not.toContain(PIN);
        expect(await first.stop()).toBe(0);

        const again = await startSession(world, env, first.apiKey);
        try {
          expect((await again.proxy(token)).status).toBe(200);
          expect(world.mock.received).toHaveLength(2);
          expect(world.mock.received.at(-1)?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
          expect(await readdir(world.dataDir)).not.toContain('master.key');
          for (const file of await filesUnder(world.dataDir)) {
            const { readFile } = await import('node:fs/promises');
            const bytes = await readFile(file);
            expect(bytes.includes(REAL_KEY), path.basename(file)).toBe(false);
            expect(bytes.includes(PIN), path.basename(file)).toBe(false);
          }
        } finally {
          await again.stop();
        }
      });

      it('a wrong PIN, another token, a wrong key label: refused at start naming the setting, nothing written', async () => {
        hsm = await createSoftHsm();
        await hsm.initToken('tp-main', PIN);
        await hsm.initToken('tp-other', PIN);
        world = await createWorld(dialect.name);
        const first = await startSession(world, hsm.env('tp-main', PIN));
        await createToken(first, REAL_KEY);
        expect(await first.stop()).toBe(0);
        const before = await storeSnapshot(world);
        const args = world.args;
        const serve = (env: Record<string, string>) =>
          runCli(['serve', ...args, '--api-port', '0', '--proxy-port', '0'], env);

        const wrongPin = await serve(hsm.env('tp-main', '999999'));
        expect(wrongPin.code).toBe(2);
        expect(wrongPin.stderr).toContain('pkcs11_pin');
        // The CK_RV's name, from the number C_Login returned.
        expect(wrongPin.stderr).toContain('refused the PIN (CKR_PIN_INCORRECT)');
        expect(wrongPin.stderr).not.toContain('999999');

        const noLibrary = await serve({
          ...hsm.env('tp-main', PIN),
          TOKENPROXY_PKCS11_MODULE: '/nonexistent/libp11.so',
        });
        expect(noLibrary.code).toBe(2);
        expect(noLibrary.stderr).toContain('Setting "pkcs11_module" (TOKENPROXY_PKCS11_MODULE)');
        // Why the loader refused it, not the path a second time.
        expect(noLibrary.stderr).toMatch(
          /cannot load the PKCS#11 library \/nonexistent\/libp11\.so \((?!\/nonexistent)[^)]+\)/,
        );

        const otherToken = await serve(hsm.env('tp-other', PIN));
        expect(otherToken.code).toBe(2);
        expect(otherToken.stderr).toContain('pkcs11_key_label');

        const wrongLabel = await serve({ ...hsm.env('tp-main', PIN), TOKENPROXY_PKCS11_KEY_LABEL: 'nope' });
        expect(wrongLabel.code).toBe(2);
        expect(wrongLabel.stderr).toContain('pkcs11_key_label');

        const noToken = await serve(hsm.env('tp-absent', PIN));
        expect(noToken.code).toBe(2);
        expect(noToken.stderr).toContain('pkcs11_token_label');
        expect(await storeSnapshot(world)).toBe(before);

        // A token holding a KEK of its own (another installation's): the KEK ids differ.
        const otherWorld = await createWorld(dialect.name);
        try {
          const other = await startSession(otherWorld, hsm.env('tp-other', PIN));
          await other.stop();
        } finally {
          await otherWorld.cleanup();
        }
        const foreign = await serve(hsm.env('tp-other', PIN));
        expect(foreign.code).toBe(2);
        expect(foreign.stderr).toContain('KEK mismatch: pkcs11_token_label');
        expect(await storeSnapshot(world)).toBe(before);
      });

      it('an HSM that fails while running: 503 kek_unavailable on both listeners, /readyz says so, then recovery', async () => {
        hsm = await createSoftHsm();
        await hsm.initToken('tp-main', PIN);
        world = await createWorld(dialect.name);
        const session = await startSession(world, hsm.env('tp-main', PIN));
        try {
          const { token, keyId } = await createToken(session, REAL_KEY);
          expect((await session.proxy(token)).status).toBe(200);
          const ready = async () => {
            const res = await request(`${session.server.apiUrl}/readyz`, { dispatcher: session.dispatcher });
            return { status: res.statusCode, body: (await res.body.json()) as { status: string } };
          };
          expect(await ready()).toEqual({ status: 200, body: { status: 'ready' } });

          await hsm.unplug();
          const proxied = await session.proxy(token);
          expect(proxied.status).toBe(503);
          expect(JSON.parse(proxied.body)).toMatchObject({ error: { code: 'kek_unavailable' } });
          const rotated = await session.api('POST', `/v1/keys/${keyId}/rotate`, {
            real_key: `${REAL_KEY}-2`,
          });
          expect(rotated.status).toBe(503);
          expect(rotated.body).toMatchObject({ error: { code: 'kek_unavailable' } });
          expect(await ready()).toEqual({ status: 503, body: { status: 'kek_unavailable' } });
          expect(world.mock.received).toHaveLength(1);

          await hsm.replug();
          // The thread reopens the library at most once a second: service resumes within a few.
          let status = 0;
          for (let i = 0; i < 50 && status !== 200; i++) {
            await new Promise((r) => setTimeout(r, 200));
            status = (await session.proxy(token)).status;
          }
          expect(status).toBe(200);
          expect(world.mock.received.at(-1)?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
          expect((await ready()).status).toBe(200);
        } finally {
          await session.stop();
        }
      });
    },
  );
}
