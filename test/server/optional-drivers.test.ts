import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMmdb, countryRecord } from '../requestlog/mmdb.js';

/**
 * The PostgreSQL driver and the GeoIP reader are loaded only by a server configured to use them: a
 * SQLite server without `geoip_db` keeps neither in its heap. Run against the built modules in a fresh
 * Node, which records every package it resolves.
 */
const built = (file: string): string =>
  JSON.stringify(fileURLToPath(new URL(`../../dist/${file}`, import.meta.url)));

let dir: string;
let mmdb: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tokenproxy-drivers-'));
  mmdb = join(dir, 'country.mmdb');
  await writeFile(
    mmdb,
    buildMmdb({ ipVersion: 4, networks: [{ cidr: '0.0.0.0/1', data: countryRecord('US') }] }),
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs `script` after the lock and country modules are imported; returns the optional packages resolved. */
async function packagesLoadedBy(script: string): Promise<string[]> {
  const file = join(dir, `probe-${Math.random().toString(36).slice(2)}.mjs`);
  await writeFile(
    file,
    `import { registerHooks } from 'node:module';
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    const m = /\\/node_modules\\/(pg|maxmind)\\//.exec(resolved.url);
    if (m) seen.add(m[1]);
    return resolved;
  },
});
const { acquireServeLock, withBootstrapLock } = await import(${built('cluster/serve-lock.js')});
const { createCountryResolver } = await import(${built('requestlog/country.js')});
${script}
console.log(JSON.stringify([...seen].sort()));
`,
  );
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [file], { timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout.trim()) as string[]),
    );
  });
}

describe('optional drivers', () => {
  it('a SQLite server without a GeoIP database loads neither the PostgreSQL driver nor the GeoIP reader', async () => {
    const dataDir = JSON.stringify(join(dir, 'sqlite'));
    const loaded = await packagesLoadedBy(`
const config = { redis: undefined, database: undefined, dataDir: ${dataDir} };
await (await import('node:fs/promises')).mkdir(${dataDir}, { recursive: true });
const lock = await acquireServeLock(config, new Date());
await withBootstrapLock(config, async () => undefined);
await lock.release();
const countryOf = await createCountryResolver({ countryHeader: 'cf-ipcountry', geoipDb: undefined });
if (countryOf({ 'cf-ipcountry': 'de' }, '127.0.0.1', true) !== 'DE') throw new Error('header country not read');`);
    expect(loaded).toEqual([]);
  });

  it('the probe sees both once PostgreSQL and a GeoIP database are configured', async () => {
    // Port 1 refuses at once: the driver is loaded to try, which is all this needs.
    const loaded = await packagesLoadedBy(`
const config = { redis: undefined, database: 'postgres://tokenproxy@127.0.0.1:1/none', dataDir: ${JSON.stringify(dir)} };
const refused = await withBootstrapLock(config, async () => 'ran').catch((e) => e);
if (!(refused instanceof Error)) throw new Error('expected the connection to be refused');
const countryOf = await createCountryResolver({ countryHeader: undefined, geoipDb: ${JSON.stringify(mmdb)} });
if (countryOf({}, '1.2.3.4') !== 'US') throw new Error('GeoIP database not read');`);
    expect(loaded).toEqual(['maxmind', 'pg']);
  });
});
