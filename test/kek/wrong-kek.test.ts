import { existsSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import {
  createToken,
  createWorld,
  startSession,
  storeSnapshot,
  TEST_DATABASE_URL,
  type KekWorld,
} from './support.js';

/**
 * Issue 13 item 2: a server or command given another key-encryption key than the store's never
 * starts and never writes; the right key keeps working afterwards.
 */
const KEY_A = Buffer.alloc(32, 0xa1).toString('base64');
const KEY_B = Buffer.alloc(32, 0xb2).toString('base64');
const REAL_KEY = `sk-kek-${Date.now()}-real`;

const dialects = [
  { name: 'sqlite' as const, available: true },
  { name: 'postgres' as const, available: TEST_DATABASE_URL !== '' },
];

for (const dialect of dialects) {
  // Four to six process starts each: generous limits, as the machine is shared.
  describe.skipIf(!dialect.available)(
    `a wrong master key is refused at start (${dialect.name})`,
    { timeout: 120_000 },
    () => {
      let world: KekWorld | undefined;
      afterEach(async () => {
        await world?.cleanup();
        world = undefined;
      });

      it('TOKENPROXY_MASTER_KEY of another key: serve and accounts create exit 2 naming it, nothing written', async () => {
        world = await createWorld(dialect.name);
        const first = await startSession(world, { TOKENPROXY_MASTER_KEY: KEY_A });
        const { token, keyId } = await createToken(first, REAL_KEY);
        expect((await first.proxy(token)).status).toBe(200);
        expect(await first.stop()).toBe(0);

        const before = await storeSnapshot(world);
        const serve = await runCli(['serve', ...world.args, '--api-port', '0', '--proxy-port', '0'], {
          TOKENPROXY_MASTER_KEY: KEY_B,
        });
        expect(serve.code).toBe(2);
        expect(serve.stderr).toContain('KEK mismatch: TOKENPROXY_MASTER_KEY holds KEK');
        expect(serve.stderr).not.toContain('Ready.');
        expect(serve.stderr).not.toContain(KEY_B);
        expect(await storeSnapshot(world)).toBe(before);

        const storeArgs = [
          '--data-dir',
          world.dataDir,
          ...(world.database ? ['--database', world.database] : []),
        ];
        const account = await runCli(['accounts', 'create', '--name', 'x', ...storeArgs], {
          TOKENPROXY_MASTER_KEY: KEY_B,
        });
        expect(account.code).toBe(2);
        expect(account.stderr).toContain('TOKENPROXY_MASTER_KEY');
        expect(account.stdout).not.toMatch(/svc_sk_/);
        expect(await storeSnapshot(world)).toBe(before);

        // The right key still opens everything: the key can be rotated and the token proxies.
        const again = await startSession(world, { TOKENPROXY_MASTER_KEY: KEY_A }, first.apiKey);
        try {
          expect((await again.proxy(token)).status).toBe(200);
          const rotated = await again.api('POST', `/v1/keys/${keyId}/rotate`, { real_key: `${REAL_KEY}-2` });
          expect(rotated.status).toBe(200);
          expect((await again.proxy(token)).status).toBe(200);
          expect(world.mock.received.at(-1)?.headers.authorization).toBe(`Bearer ${REAL_KEY}-2`);
        } finally {
          await again.stop();
        }
      });

      it('a master.key file of another key: refused naming master.key; a fresh data dir on a used database too', async () => {
        world = await createWorld(dialect.name);
        const first = await startSession(world, {});
        await createToken(first, REAL_KEY);
        expect(await first.stop()).toBe(0);

        const keyFile = path.join(world.dataDir, 'master.key');
        await writeFile(keyFile, `${KEY_B}\n`);
        await chmod(keyFile, 0o600);
        const before = await storeSnapshot(world);
        const serve = await runCli(['serve', ...world.args, '--api-port', '0', '--proxy-port', '0']);
        expect(serve.code).toBe(2);
        expect(serve.stderr).toContain('KEK mismatch: master.key');
        expect(serve.stderr).toContain(keyFile);
        expect(await storeSnapshot(world)).toBe(before);

        if (world.database !== undefined) {
          // Another host with no master.key at all, pointed at the same database: refused, and
          // neither the key it generated nor the data dir it made is left behind.
          const otherDir = path.join(world.dataDir, 'elsewhere');
          const args = world.args.map((a) => (a === world?.dataDir ? otherDir : a));
          const res = await runCli(['serve', ...args, '--api-port', '0', '--proxy-port', '0']);
          expect(res.code).toBe(2);
          expect(res.stderr).toContain('No master.key was found');
          expect(existsSync(otherDir)).toBe(false);
          expect(await storeSnapshot(world)).toBe(before);
        }
      });
    },
  );
}
