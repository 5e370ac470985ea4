import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KekError } from '../../src/vault/kek-error.js';
import { createLocalVault, loadLocalKek } from '../../src/vault/local-kek.js';
import { rejection } from '../support/rejection.js';

const posix = process.platform !== 'win32';

let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tokenproxy-kek-'));
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('loadLocalKek from <dataDir>/master.key', () => {
  it('creates a 0600 file of base64 + newline on first call, and returns the same key after', async () => {
    const first = await loadLocalKek({ dataDir });
    expect(first.length).toBe(32);
    const path = join(dataDir, 'master.key');
    const content = await readFile(path, 'utf8');
    expect(content).toBe(`${first.toString('base64')}\n`);
    if (posix) expect((await stat(path)).mode & 0o777).toBe(0o600);

    const second = await loadLocalKek({ dataDir });
    expect(second.equals(first)).toBe(true);
    // No temporary files left behind.
    expect(await readdir(dataDir)).toEqual(['master.key']);
  });

  it('creates the data dir when it is missing', async () => {
    const nested = join(dataDir, 'a', 'b');
    const key = await loadLocalKek({ dataDir: nested });
    expect((await loadLocalKek({ dataDir: nested })).equals(key)).toBe(true);
  });

  it('gives concurrent first starts one and the same key', async () => {
    const keys = await Promise.all(Array.from({ length: 5 }, () => loadLocalKek({ dataDir })));
    for (const key of keys) expect(key.equals(keys[0] as Buffer)).toBe(true);
    const onDisk = Buffer.from((await readFile(join(dataDir, 'master.key'), 'utf8')).trim(), 'base64');
    expect(onDisk.equals(keys[0] as Buffer)).toBe(true);
    expect(await readdir(dataDir)).toEqual(['master.key']);
  });

  it.runIf(posix)('refuses a file readable by others, naming the file, its mode and the fix', async () => {
    await loadLocalKek({ dataDir });
    const path = join(dataDir, 'master.key');
    await chmod(path, 0o644);
    const err = await rejection(loadLocalKek({ dataDir }));
    expect(err).toBeInstanceOf(KekError);
    expect(err).toMatchObject({ setting: `master.key (${path})`, code: 'invalid_config' });
    expect(err.message).toContain(path);
    expect(err.message).toContain('0644');
    expect(err.message).toContain(`chmod 600 ${path}`);
  });

  it.runIf(posix)('refuses group-only permissions too', async () => {
    await loadLocalKek({ dataDir });
    await chmod(join(dataDir, 'master.key'), 0o640);
    await expect(loadLocalKek({ dataDir })).rejects.toThrow(/0640/);
    await chmod(join(dataDir, 'master.key'), 0o400);
    await expect(loadLocalKek({ dataDir })).resolves.toHaveLength(32);
  });

  it.each([
    { name: 'empty', content: '' },
    { name: 'not base64', content: 'this is not a key at all!\n' },
    { name: '16 bytes', content: `${randomBytes(16).toString('base64')}\n` },
    { name: '33 bytes', content: `${randomBytes(33).toString('base64')}\n` },
    { name: 'hex of 32 bytes', content: `${randomBytes(32).toString('hex')}\n` },
  ])('refuses content that is $name, without echoing it', async ({ content }) => {
    const path = join(dataDir, 'master.key');
    await writeFile(path, content, { mode: 0o600 });
    const err = await rejection(loadLocalKek({ dataDir }));
    expect(err).toBeInstanceOf(KekError);
    expect(err).toMatchObject({ setting: `master.key (${path})` });
    expect(err.message).toContain(path);
    expect(err.message).toMatch(/32 random bytes/);
    if (content.trim() !== '') expect(err.message).not.toContain(content.trim());
  });

  it('accepts a hand-written file without a trailing newline', async () => {
    const key = randomBytes(32);
    await writeFile(join(dataDir, 'master.key'), key.toString('base64url'), { mode: 0o600 });
    expect((await loadLocalKek({ dataDir })).equals(key)).toBe(true);
  });
});

describe('loadLocalKek from TOKENPROXY_MASTER_KEY', () => {
  const key = randomBytes(32);

  it.each([
    { name: 'standard base64', value: key.toString('base64') },
    { name: 'url-safe base64', value: key.toString('base64url') },
    { name: 'url-safe base64 with padding', value: `${key.toString('base64url')}=` },
    { name: 'standard base64 without padding', value: key.toString('base64').replace(/=$/, '') },
    { name: 'surrounding whitespace', value: `  ${key.toString('base64')}\n` },
  ])('accepts $name and ignores the file', async ({ value }) => {
    const loaded = await loadLocalKek({ dataDir, envValue: value });
    expect(loaded.equals(key)).toBe(true);
    expect(await readdir(dataDir)).toEqual([]);
  });

  it('uses a key whose base64 holds both + and / or - and _', async () => {
    // 0xfb 0xff… encodes to "+/" in standard and "-_" in url-safe base64.
    const special = Buffer.alloc(32, 0xfb);
    special.writeUInt16BE(0xffff, 3);
    expect((await loadLocalKek({ dataDir, envValue: special.toString('base64') })).equals(special)).toBe(
      true,
    );
    expect((await loadLocalKek({ dataDir, envValue: special.toString('base64url') })).equals(special)).toBe(
      true,
    );
  });

  it.each([
    { name: 'empty', value: '' },
    { name: 'not base64', value: 'not-a-valid-key!!' },
    {
      name: 'base64 with a stray character',
      value: `${key.toString('base64').slice(0, 20)}*${key.toString('base64').slice(21)}`,
    },
    { name: 'mixed alphabets', value: `+_${key.toString('base64').slice(2)}` },
    { name: '31 bytes', value: randomBytes(31).toString('base64') },
    { name: '33 bytes', value: randomBytes(33).toString('base64') },
    { name: '64 bytes', value: randomBytes(64).toString('base64') },
    { name: 'hex of 32 bytes', value: key.toString('hex') },
  ])('refuses $name, naming the variable and what is accepted', async ({ value }) => {
    const err = await rejection(loadLocalKek({ dataDir, envValue: value }));
    expect(err).toBeInstanceOf(KekError);
    expect(err).toMatchObject({ setting: 'TOKENPROXY_MASTER_KEY' });
    expect(err.message).toContain('TOKENPROXY_MASTER_KEY');
    expect(err.message).toMatch(/base64/);
    expect(err.message).toMatch(/32 random bytes/);
    if (value !== '') expect(err.message).not.toContain(value);
    expect(await readdir(dataDir)).toEqual([]);
  });
});

describe('createLocalVault with a loaded KEK', () => {
  it('decrypts after a restart that reloads the key from the file', async () => {
    const binding = { keyId: 'key_a', accountId: 'acct_a' };
    const secret = Buffer.from('sk-live-secret');
    const envelope = await createLocalVault(await loadLocalKek({ dataDir })).encrypt(secret, binding);
    const reloaded = createLocalVault(await loadLocalKek({ dataDir }));
    expect((await reloaded.decrypt(envelope, binding)).equals(secret)).toBe(true);
  });
});

describe('the KEK in memory', () => {
  it('leaves no copy of the master key in the shared Buffer pool once the caller zeroes its own', async () => {
    // Neither from the pool, so only a copy made by the code under test could be found there.
    const master = Buffer.alloc(32);
    randomBytes(32).copy(master);
    const needle = Buffer.alloc(32);
    master.copy(needle);
    // Small Buffer copies come from one shared pool block at a time: look in the one current before
    // the KEK is made and in the one current after it.
    const poolBefore = Buffer.from('x').buffer;
    const vault = createLocalVault(master);
    const poolAfter = Buffer.from('y').buffer;
    master.fill(0);
    for (const pool of new Set([poolBefore, poolAfter])) {
      expect(Buffer.from(pool).indexOf(needle), 'a copy of the master key in the Buffer pool').toBe(-1);
    }
    // The vault kept its own native copy: it still seals and opens.
    const binding = { keyId: 'key_m', accountId: 'acct_m' };
    const envelope = await vault.encrypt(Buffer.from('sk-pool-check'), binding);
    expect((await vault.decrypt(envelope, binding)).toString()).toBe('sk-pool-check');
  });
});
