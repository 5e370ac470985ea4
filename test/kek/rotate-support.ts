import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/store/open.js';
import { BIN } from '../support/cli.js';
import { filesUnder } from '../support/files.js';
import { createToken, type KekWorld, type Session } from './support.js';

const run = promisify(execFile);

/** What the `kek rotate` / `kek migrate` tests share: a store full of keys, traffic, checks. */

/**
 * The free plan allows 3 tokens; the other envelopes are keys stored without one. Enough of them
 * that a rotation killed after its third batch of one (killedAfterBatches) is still rewrapping when
 * the kill lands: with 14, a loaded machine let it finish the last 11 before the test reacted.
 */
export const TOKENS = 3;
export const ENVELOPES = 48;

export interface Filled {
  /** Sanitized token and the real key the provider must receive for it. */
  readonly tokens: ReadonlyArray<{ token: string; realKey: string }>;
  /** Every real key stored, for the plaintext scans. */
  readonly realKeys: string[];
}

export async function fillStore(session: Session, tag: string): Promise<Filled> {
  const tokens: Array<{ token: string; realKey: string }> = [];
  const realKeys: string[] = [];
  for (let i = 0; i < TOKENS; i++) {
    const realKey = `sk-${tag}-token-${i}-real-provider-key`;
    tokens.push({ token: (await createToken(session, realKey)).token, realKey });
    realKeys.push(realKey);
  }
  for (let i = TOKENS; i < ENVELOPES; i++) {
    const realKey = `sk-${tag}-stored-${i}-real-provider-key`;
    const key = await session.api('POST', '/v1/keys', {
      name: `k${i}`,
      provider: 'openai',
      real_key: realKey,
    });
    if (key.status !== 201) throw new Error(`key creation answered ${key.status}`);
    realKeys.push(realKey);
  }
  return { tokens, realKeys };
}

/**
 * Proxies through every token, one request at a time, until stopped: each answer must be 200 and
 * the mock provider must have received that token's real key. Returns what failed, and how many
 * requests went through.
 */
export function traffic(
  world: KekWorld,
  session: Session,
  filled: Filled,
): { stop(): Promise<{ ok: number; failures: string[] }> } {
  let running = true;
  let ok = 0;
  const failures: string[] = [];
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const { token, realKey } = filled.tokens[i % filled.tokens.length] ?? { token: '', realKey: '' };
      const res = await session.proxy(token);
      const got = world.mock.received.at(-1)?.headers.authorization;
      if (res.status !== 200) {
        // What the server logged about it (never a key: the logs hold ids and error codes).
        const logged = `${session.server.stdout()}\n${session.server.stderr()}`
          .split('\n')
          .filter((l) => /KEK|HSM|decrypt/.test(l))
          .slice(-3);
        failures.push(`request ${i}: ${res.status} ${res.body.slice(0, 200)} ${logged.join(' | ')}`);
      } else if (got !== `Bearer ${realKey}`)
        failures.push(`request ${i}: the provider received another key`);
      else ok++;
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { ok, failures };
    },
  };
}

/**
 * Runs `tokenproxy kek <args>` and SIGKILLs it as soon as it has reported `batches` batches.
 * Resolves to what it printed.
 */
export function killedAfterBatches(
  args: string[],
  env: Record<string, string>,
  pattern: RegExp,
  batches: number,
): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'kek', ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if ((out.match(new RegExp(pattern, 'g')) ?? []).length >= batches) child.kill('SIGKILL');
    });
    child.on('close', () => resolve(out));
  });
}

/** Every envelope's KEK id, per table, straight from the database. */
export async function envelopeKekIds(world: KekWorld): Promise<string[]> {
  const config = configOf(world, {});
  const store = await openStore({ database: config.database, dataDir: config.dataDir });
  try {
    const counts = await store.keks.envelopeCounts();
    return [...counts.keys()].sort();
  } finally {
    await store.close();
  }
}

export async function kekVersions(
  world: KekWorld,
): Promise<ReadonlyArray<{ id: string; retired: boolean; provider: string }>> {
  const config = configOf(world, {});
  const store = await openStore({ database: config.database, dataDir: config.dataDir });
  try {
    return (await store.keks.list()).map((v) => ({
      id: v.id,
      retired: v.retiredAt !== null,
      provider: v.provider,
    }));
  } finally {
    await store.close();
  }
}

/**
 * Opens every provider-key envelope of the store with the KEK as a fresh start would load it, and
 * returns the real keys (sorted): proof that nothing was lost or left under a destroyed KEK. Runs
 * in a child process on the built modules, like the binary: a PKCS#11 library is initialised once
 * per process, for one SOFTHSM2_CONF.
 */
export async function decryptAll(world: KekWorld, env: Record<string, string>): Promise<string[]> {
  const dist = (file: string) => JSON.stringify(new URL(`../../dist/${file}`, import.meta.url).href);
  const script = `
    import { loadConfig } from ${dist('config/load.js')};
    import { openStore } from ${dist('store/open.js')};
    import { openKek } from ${dist('vault/open-kek.js')};
    const env = JSON.parse(process.env.KEK_TEST_ENV);
    const config = loadConfig({ flags: JSON.parse(process.env.KEK_TEST_FLAGS), env });
    const store = await openStore({ database: config.database, dataDir: config.dataDir });
    const vault = await openKek(config, env, store);
    const out = [];
    for (const kekId of (await store.keks.envelopeCounts()).keys()) {
      for (const ref of await store.keks.envelopesUnder(kekId, 10000)) {
        if (ref.table !== 'provider_keys') continue;
        out.push((await vault.decrypt(ref.envelope, ref)).toString('utf8'));
      }
    }
    await vault.close();
    await store.close();
    process.stdout.write(JSON.stringify(out));
  `;
  const flags = {
    data_dir: world.dataDir,
    ...(world.database === undefined ? {} : { database: world.database }),
  };
  // A file, not `-e`: the HSM thread would inherit `--input-type` and refuse to start.
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-decrypt-'));
  const file = path.join(dir, 'decrypt.mjs');
  await writeFile(file, script);
  const { stdout } = await run(process.execPath, [file], {
    env: {
      PATH: process.env.PATH ?? '',
      ...env,
      KEK_TEST_ENV: JSON.stringify(env),
      KEK_TEST_FLAGS: JSON.stringify(flags),
    },
  });
  await rm(dir, { recursive: true, force: true });
  return (JSON.parse(stdout) as string[]).sort();
}

function configOf(world: KekWorld, env: Record<string, string>) {
  return loadConfig({
    flags: { data_dir: world.dataDir, ...(world.database === undefined ? {} : { database: world.database }) },
    env,
  });
}

/**
 * No real key in the clear anywhere: not in a file of the data dir (database, WAL, key files), not
 * in any row of PostgreSQL.
 */
export async function plaintextFound(world: KekWorld, realKeys: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const file of await filesUnder(world.dataDir)) {
    const bytes = await readFile(file);
    for (const key of realKeys) if (bytes.includes(key)) found.push(`${path.basename(file)}: ${key}`);
  }
  if (world.database !== undefined) {
    const client = new pg.Client({ connectionString: world.database });
    await client.connect();
    try {
      const tables = await client.query<{ tablename: string }>(
        `select tablename from pg_tables where schemaname = 'public'`,
      );
      for (const { tablename } of tables.rows) {
        const rows = await client.query<{ row: string }>(`select t::text as row from "${tablename}" t`);
        for (const { row } of rows.rows) {
          for (const key of realKeys) if (row.includes(key)) found.push(`${tablename}: ${key}`);
        }
      }
    } finally {
      await client.end();
    }
  }
  return found;
}
