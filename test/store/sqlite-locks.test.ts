import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteFilePath } from '../../src/store/dialects/sqlite.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';

/** The POSIX locks this process holds on `file`, from /proc/locks (Linux). */
async function locksOn(file: string): Promise<number> {
  const { ino } = await stat(file);
  const table = await readFile('/proc/locks', 'utf8');
  return table.split('\n').filter((line) => {
    const fields = line.trim().split(/\s+/);
    // "1: POSIX  ADVISORY  READ 1234 08:01:5678 1073741826 1073742335"
    return fields[1] === 'POSIX' && fields[4] === String(process.pid) && fields[5]?.endsWith(`:${ino}`);
  }).length;
}

describe.skipIf(process.platform !== 'linux')('SQLite: a second connection of the process', () => {
  const stores: Store[] = [];
  let dir = '';
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it("keeps the first connection's locks on the database file (the log writer opened beside the server's)", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-sqlite-locks-'));
    const main = await openStore({ database: undefined, dataDir: dir });
    stores.push(main);
    await main.accounts.count();
    const file = sqliteFilePath(dir);
    const held = await locksOn(file);
    // WAL mode: an open connection holds a shared lock on the file for as long as it is open.
    expect(held).toBeGreaterThan(0);
    const writer = await openStore({ database: undefined, dataDir: dir, logWriter: true });
    stores.push(writer);
    await writer.accounts.count();
    await main.accounts.count();
    expect(await locksOn(file)).toBeGreaterThanOrEqual(held);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });
});
