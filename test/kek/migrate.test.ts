import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../support/cli.js';
import { pathExists } from '../../src/server/data-dir.js';
import { createOperatorKey, createSoftHsm, secretKeysOn, type SoftHsm } from './softhsm.js';
import { createToken, createWorld, startSession, TEST_DATABASE_URL, type KekWorld } from './support.js';

/** Issue 16 item 3, `kek migrate --to pkcs11`: a local store moved into SoftHSM2, killed midway and resumed. */
const PIN = '135790';
const MASTER = Buffer.alloc(32, 0x5c).toString('base64');
// Enough batches (of 1) that the SIGKILL sent on the first one lands while most are still to move.
const ENVELOPES = 64;

const dialects = [
  { name: 'sqlite' as const, available: true },
  { name: 'postgres' as const, available: TEST_DATABASE_URL !== '' },
];

/** Runs the migration and SIGKILLs it as soon as it reports its first batch. */
function killedMidway(args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [BIN, 'kek', 'migrate', '--to', 'pkcs11', '--batch-size', '1', ...args],
      {
        env: { PATH: process.env.PATH ?? '', ...env },
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('moved 1 envelopes')) child.kill('SIGKILL');
    });
    child.on('close', () => resolve(out));
  });
}

for (const dialect of dialects) {
  describe.skipIf(!dialect.available)(
    `kek migrate --to pkcs11 (${dialect.name})`,
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

      it.skipIf(dialect.name !== 'sqlite')(
        'refuses a mistyped data dir, a wrong master key (before touching the HSM) and an HSM key another store made',
        async () => {
          hsm = await createSoftHsm();
          await hsm.initToken('tp-guard', PIN);
          world = await createWorld(dialect.name);
          const local = await startSession(world, { TOKENPROXY_MASTER_KEY: MASTER });
          await createToken(local, 'sk-guarded-real-key');
          // Enough envelopes that a run killed after its first batch leaves some to move.
          for (let i = 0; i < 6; i++) {
            const key = await local.api('POST', '/v1/keys', {
              name: `g${i}`,
              provider: 'openai',
              real_key: `sk-guarded-${i}`,
            });
            expect(key.status).toBe(201);
          }
          expect(await local.stop()).toBe(0);
          const env = { ...hsm.env('tp-guard', PIN), TOKENPROXY_MASTER_KEY: MASTER };
          const migrate = (args: string[], withEnv: Record<string, string>) =>
            runCli(['kek', 'migrate', '--to', 'pkcs11', ...args], withEnv);
          const keys = () => secretKeysOn(hsm as SoftHsm, 'tp-guard', PIN);

          const typo = `${world.dataDir}-typo`;
          const mistyped = await migrate(
            world.args.map((a) => (a === world?.dataDir ? typo : a)),
            env,
          );
          expect(mistyped.code).toBe(2);
          expect(mistyped.stderr).toContain('kek migrate found no tokenproxy store');
          expect(await pathExists(typo)).toBe(false);

          const wrongKey = await migrate(world.args, {
            ...env,
            TOKENPROXY_MASTER_KEY: Buffer.alloc(32, 0x11).toString('base64'),
          });
          expect(wrongKey.code).toBe(2);
          expect(wrongKey.stderr).toContain('KEK mismatch');
          expect(await keys()).toEqual([]);

          // Another store on the same token and label made the key first.
          const other = await createWorld(dialect.name);
          try {
            await (await startSession(other, hsm.env('tp-guard', PIN))).stop();
            const theirs = await keys();
            expect(theirs).toHaveLength(1);
            const foreign = await migrate(world.args, env);
            expect(foreign.code).toBe(2);
            expect(foreign.stderr).toContain(
              'the token "tp-guard" already holds a key labelled "tokenproxy-kek" (or "tokenproxy-kek.next") that another tokenproxy store created, not this store',
            );
            // A third, new store started on it is refused the same way: it would share the key.
            const third = await createWorld(dialect.name);
            try {
              const fresh = await runCli(
                ['serve', ...third.args, '--api-port', '0', '--proxy-port', '0'],
                hsm.env('tp-guard', PIN),
              );
              expect(fresh.code).toBe(2);
              expect(fresh.stderr).toContain('that another tokenproxy store created, not this new store');
            } finally {
              await third.cleanup();
            }
            expect(await keys()).toEqual(theirs);
            // A key the HSM's own tools made (no tokenproxy mark) is how an operator provides one: a
            // new store takes it.
            await createOperatorKey(hsm, 'tp-guard', PIN, 'operator-kek');
            const provided = await createWorld(dialect.name);
            try {
              const session = await startSession(provided, {
                ...hsm.env('tp-guard', PIN),
                TOKENPROXY_PKCS11_KEY_LABEL: 'operator-kek',
              });
              expect(await session.stop()).toBe(0);
              expect((await keys()).map((k) => k.label).sort()).toEqual(['operator-kek', 'tokenproxy-kek']);
            } finally {
              await provided.cleanup();
            }
            // With a label of its own, the migration goes through; stopped midway, it is finished with
            // the same settings only, never split under a second HSM key.
            const own = { ...env, TOKENPROXY_PKCS11_KEY_LABEL: 'guarded-kek' };
            expect(await killedMidway(world.args, own)).toContain('moved 1 envelopes');
            const before = await keys();
            const split = await migrate(world.args, { ...env, TOKENPROXY_PKCS11_KEY_LABEL: 'second-kek' });
            expect(split.code).toBe(2);
            expect(split.stderr).toContain('keys of this store are already under the HSM KEK');
            expect(split.stderr).toContain('guarded-kek');
            expect(await keys()).toEqual(before);
            const finished = await migrate(world.args, own);
            expect(finished.stderr).toBe('');
            expect(finished.code).toBe(0);
          } finally {
            await other.cleanup();
          }
        },
      );

      it('moves every key into the HSM, resumes after kill -9, and the local KEK is refused afterwards', async () => {
        hsm = await createSoftHsm();
        await hsm.initToken('tp-migrate', PIN);
        world = await createWorld(dialect.name);
        const local = await startSession(world, { TOKENPROXY_MASTER_KEY: MASTER });
        const tokens: string[] = [];
        // The free plan allows 3 tokens; more envelopes come from keys stored without a token.
        for (let i = 0; i < 3; i++) tokens.push((await createToken(local, `sk-migrate-${i}-real`)).token);
        for (let i = 3; i < ENVELOPES; i++) {
          const key = await local.api('POST', '/v1/keys', {
            name: `k${i}`,
            provider: 'openai',
            real_key: `sk-key-${i}`,
          });
          expect(key.status).toBe(201);
        }
        expect(await local.stop()).toBe(0);

        const env = { ...hsm.env('tp-migrate', PIN), TOKENPROXY_MASTER_KEY: MASTER };
        const first = await killedMidway(world.args, env);
        expect(first).toContain('moved 1 envelopes');
        expect(first).not.toContain('Done');

        const rerun = await runCli(['kek', 'migrate', '--to', 'pkcs11', ...world.args], env);
        expect(rerun.stderr).toBe('');
        expect(rerun.code).toBe(0);
        const moved = Number(/Done: (\d+) envelopes moved/.exec(rerun.stdout)?.[1]);
        // The killed run had moved some: the rerun finished the rest, no more.
        expect(moved).toBeGreaterThan(0);
        expect(moved).toBeLessThan(ENVELOPES);
        expect(rerun.stdout).not.toContain(PIN);

        // A third run has nothing left to do.
        const again = await runCli(['kek', 'migrate', '--to', 'pkcs11', ...world.args], env);
        expect(again.stdout).toContain('Done: 0 envelopes moved');

        const refused = await runCli(['serve', ...world.args, '--api-port', '0', '--proxy-port', '0'], {
          TOKENPROXY_MASTER_KEY: MASTER,
        });
        expect(refused.code).toBe(2);
        expect(refused.stderr).toContain('retired');
        // The key is right and the store moved: the advice is the setting, not a backup.
        expect(refused.stderr).toContain('`tokenproxy kek migrate` retired');
        expect(refused.stderr).toContain('Start with kek "pkcs11" and the pkcs11_* settings');
        expect(refused.stderr).not.toContain('backup');

        const session = await startSession(world, hsm.env('tp-migrate', PIN), local.apiKey);
        try {
          for (const [i, token] of tokens.entries()) {
            expect((await session.proxy(token)).status).toBe(200);
            expect(world.mock.received.at(-1)?.headers.authorization).toBe(`Bearer sk-migrate-${i}-real`);
          }
        } finally {
          await session.stop();
        }
      });
    },
  );
}
