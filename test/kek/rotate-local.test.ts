import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
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
import {
  createWorld,
  startSession,
  storeSnapshot,
  TEST_DATABASE_URL,
  type KekWorld,
  type Session,
} from './support.js';

/** Issue 16 item 3: `tokenproxy kek rotate` with the local KEK, while `serve` runs on the same store. */

const dialects = [
  { name: 'sqlite' as const, available: true },
  { name: 'postgres' as const, available: TEST_DATABASE_URL !== '' },
];

for (const dialect of dialects) {
  describe.skipIf(!dialect.available)(`kek rotate, local KEK (${dialect.name})`, { timeout: 240_000 }, () => {
    let world: KekWorld | undefined;
    afterEach(async () => {
      await world?.cleanup();
      world = undefined;
    });

    it('rotates while requests and writes flow: no failed request, every key under the new version, the old key destroyed', async () => {
      world = await createWorld(dialect.name);
      const session = await startSession(world, {});
      try {
        const filled = await fillStore(session, `rot-${dialect.name}`);
        const masterBefore = await readFile(path.join(world.dataDir, 'master.key'));
        const [oldId] = await envelopeKekIds(world);
        expect(await kekVersions(world)).toEqual([{ id: oldId, retired: false, provider: 'local' }]);

        // A create whose answer was lost, retried with the same Idempotency-Key after the rotation:
        // the record made under the old version must still match (replayed, not a conflict).
        const idempotent = { name: 'idem', provider: 'openai', real_key: 'sk-rot-idem-real-provider-key' };
        const firstTry = await postWithKey(session, '/v1/keys', idempotent, 'rotate-idem-1');
        expect(firstTry.status).toBe(201);

        const flow = traffic(world, session, filled);
        let rotating = true;
        const rotation = runCli(['kek', 'rotate', '--batch-size', '2', ...world.args], {}, 180_000).finally(
          () => (rotating = false),
        );
        // Keys created by the running server while the rotation runs: sealed under whichever version
        // is newest when they are written, and rewrapped if that was the old one.
        const written: string[] = [];
        while (rotating && written.length < 20) {
          const realKey = `sk-rot-during-${written.length}-real-provider-key`;
          const res = await session.api('POST', '/v1/keys', {
            name: 'during',
            provider: 'openai',
            real_key: realKey,
          });
          expect(res.status).toBe(201);
          written.push(realKey);
          await sleep(250);
        }
        const done = await rotation;
        const flowed = await flow.stop();
        expect(done.stderr).toBe('');
        expect(done.code).toBe(0);
        expect(done.stdout).toMatch(/Done: \d+ envelopes rewrapped/);
        expect(flowed.failures).toEqual([]);
        expect(flowed.ok).toBeGreaterThan(0);

        const versions = await kekVersions(world);
        expect(versions).toHaveLength(2);
        expect(versions[0]).toEqual({ id: oldId, retired: true, provider: 'local' });
        const newId = versions[1]?.id ?? '';
        expect(versions[1]?.retired).toBe(false);
        expect(await envelopeKekIds(world)).toEqual([newId]);

        // The old master key is gone: master.key now holds the new one, and no next file is left.
        const files = await readdir(world.dataDir);
        expect(files).not.toContain('master.next.key');
        expect((await readFile(path.join(world.dataDir, 'master.key'))).equals(masterBefore)).toBe(false);

        // The running server writes under the new version by itself, and reads what it wrote.
        const after = await session.api('POST', '/v1/keys', {
          name: 'after',
          provider: 'openai',
          real_key: 'sk-rot-after-real-provider-key',
        });
        expect(after.status).toBe(201);
        expect(await envelopeKekIds(world)).toEqual([newId]);
        const flowedAgain = traffic(world, session, filled);
        await sleep(300);
        const again = await flowedAgain.stop();
        expect(again.failures).toEqual([]);

        const retry = await postWithKey(session, '/v1/keys', idempotent, 'rotate-idem-1');
        expect(retry.status).toBe(201);
        expect(retry.replayed).toBe('true');
        expect(retry.body).toBe(firstTry.body);

        const all = [
          ...filled.realKeys,
          ...written,
          'sk-rot-after-real-provider-key',
          'sk-rot-idem-real-provider-key',
        ].sort();
        expect(await decryptAll(world, {})).toEqual(all);
        expect(await plaintextFound(world, all)).toEqual([]);
      } finally {
        await session.stop();
      }
      // A restart finds the new master.key and nothing else.
      const restarted = await startSession(world, {}, session.apiKey);
      try {
        const filled = await restarted.api('GET', '/v1/keys?limit=100');
        expect(filled.status).toBe(200);
      } finally {
        await restarted.stop();
      }
    });

    it('a rotation killed midway (kill -9) is finished by running it again; the old version goes only when unused', async () => {
      world = await createWorld(dialect.name);
      const session = await startSession(world, {});
      try {
        const filled = await fillStore(session, `kill-${dialect.name}`);
        const [oldId] = await envelopeKekIds(world);
        const flow = traffic(world, session, filled);

        const first = await killedAfterBatches(
          ['rotate', '--batch-size', '1', ...world.args],
          {},
          /rewrapped \d+ envelopes/,
          3,
        );
        expect(first).toContain('rewrapped 3 envelopes');
        expect(first).not.toContain('Done');
        // Stopped halfway: both versions live, the old key still beside the new one, keys under both.
        const halfway = await kekVersions(world);
        expect(halfway.map((v) => v.retired)).toEqual([false, false]);
        expect(await readdir(world.dataDir)).toEqual(
          expect.arrayContaining(['master.key', 'master.next.key']),
        );
        const newId = halfway[1]?.id ?? '';
        expect(await envelopeKekIds(world)).toEqual([oldId, newId].sort());
        expect(await decryptAll(world, {})).toEqual([...filled.realKeys].sort());

        const rerun = await runCli(['kek', 'rotate', '--batch-size', '2', ...world.args], {}, 180_000);
        expect(rerun.stderr).toBe('');
        expect(rerun.code).toBe(0);
        expect(rerun.stdout).toContain('an interrupted rotation finished');
        expect(rerun.stdout).toContain(`to KEK ${newId}`);
        const flowed = await flow.stop();
        expect(flowed.failures).toEqual([]);

        expect(await kekVersions(world)).toEqual([
          { id: oldId, retired: true, provider: 'local' },
          { id: newId, retired: false, provider: 'local' },
        ]);
        expect(await envelopeKekIds(world)).toEqual([newId]);
        expect(await readdir(world.dataDir)).not.toContain('master.next.key');
        expect(await decryptAll(world, {})).toEqual([...filled.realKeys].sort());
        expect(await plaintextFound(world, filled.realKeys)).toEqual([]);
      } finally {
        await session.stop();
      }
    });
  });
}

async function postWithKey(
  session: Session,
  url: string,
  body: unknown,
  key: string,
): Promise<{ status: number; body: string; replayed: string | undefined }> {
  const res = await request(`${session.server.apiUrl}${url}`, {
    method: 'POST',
    dispatcher: session.dispatcher,
    headers: {
      authorization: `Bearer ${session.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify(body),
  });
  const replayed = res.headers['idempotent-replayed'];
  return {
    status: res.statusCode,
    body: await res.body.text(),
    replayed: typeof replayed === 'string' ? replayed : undefined,
  };
}

describe('kek rotate refuses what it cannot rotate', { timeout: 120_000 }, () => {
  let world: KekWorld | undefined;
  afterEach(async () => {
    await world?.cleanup();
    world = undefined;
  });

  it('with TOKENPROXY_MASTER_KEY set: refused, says how to move the key into a file, changes nothing', async () => {
    world = await createWorld('sqlite');
    const master = Buffer.alloc(32, 0x3d).toString('base64');
    const session = await startSession(world, { TOKENPROXY_MASTER_KEY: master });
    await fillStore(session, 'env');
    expect(await session.stop()).toBe(0);
    const before = await storeSnapshot(world);
    const refused = await runCli(['kek', 'rotate', ...world.args], { TOKENPROXY_MASTER_KEY: master });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('TOKENPROXY_MASTER_KEY');
    expect(refused.stderr).toContain('master.key');
    expect(refused.stderr).toContain('kek migrate --to pkcs11');
    expect(refused.stderr).not.toContain(master);
    expect(await storeSnapshot(world)).toBe(before);
    expect(await readdir(world.dataDir)).not.toContain('master.next.key');
    // The advice writes the file only where there is none (set -C): never over another key.
    expect(refused.stderr).toContain('set -C');
  });

  it('on a data dir with no store: refused, and no store is made there', async () => {
    const typo = path.join(os.tmpdir(), `tokenproxy-no-store-${process.pid}-${Date.now()}`);
    const refused = await runCli(['kek', 'rotate', '--data-dir', typo]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`no tokenproxy store in ${typo}`);
    expect(existsSync(typo)).toBe(false);
  });

  it('with a TOKENPROXY_MASTER_KEY that is not the store’s: refused as a KEK mismatch, and the master.key is not named as a place to write it', async () => {
    world = await createWorld('sqlite');
    const session = await startSession(world, {});
    await fillStore(session, 'file');
    expect(await session.stop()).toBe(0);
    const keyFile = path.join(world.dataDir, 'master.key');
    const key = await readFile(keyFile, 'utf8');
    const wrong = Buffer.alloc(32, 0x4e).toString('base64');
    const refused = await runCli(['kek', 'rotate', ...world.args], { TOKENPROXY_MASTER_KEY: wrong });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('KEK mismatch');
    expect(refused.stderr).not.toContain('printf');
    expect(refused.stderr).not.toContain(wrong);
    expect(await readFile(keyFile, 'utf8')).toBe(key);
  });
});
