import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { statfsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../src/cli/main.js';
import { acquireInstanceLock } from '../../src/server/instance-lock.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { openStore, openStoreWithoutMigrating } from '../../src/store/open.js';

/**
 * A start on a full file system: the data dir is right and only needs room, so the refusal says so
 * (exit 1), instead of "choose a directory this user can write" (exit 2) or a bare "disk I/O error".
 * A real full file system needs a mount (a 2 MB tmpfs), hence root; elsewhere this is skipped.
 */
function canMount(): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  try {
    execFileSync('mount', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!canMount())('start-up on a full file system (needs root: mounts a 2 MB tmpfs)', () => {
  let mountPoint: string;
  let dataDir: string;

  beforeAll(async () => {
    mountPoint = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mountPoint]);
    dataDir = path.join(mountPoint, 'data');
    await mkdir(dataDir);
  });

  afterAll(async () => {
    execFileSync('umount', [mountPoint]);
    await rm(mountPoint, { recursive: true, force: true });
  });

  async function fill(leave: number): Promise<void> {
    const fs = statfsSync(mountPoint);
    await writeFile(path.join(mountPoint, 'filler'), Buffer.alloc(Math.max(0, fs.bavail * fs.bsize - leave)));
  }

  it('the serve lock says the disk is full and exits 1', async () => {
    await fill(0);
    try {
      const error = await acquireInstanceLock(dataDir).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toContain('is full');
      expect((error as Error).message).toContain(`df -h ${dataDir}`);
      expect((error as Error).message).not.toContain('choose a directory');
      expect(exitCodeOf(error)).toBe(1);
    } finally {
      await rm(path.join(mountPoint, 'filler'), { force: true });
    }
  });

  it('opening the SQLite store names the free space when SQLite says only "disk I/O error"', async () => {
    await (await openStore({ database: undefined, dataDir })).close();
    await fill(0);
    const store = await openStoreWithoutMigrating({ database: undefined, dataDir });
    try {
      const error = await store.ping().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as StoreUnavailableError).reason).toBe('full');
      expect((error as Error).message).toContain(`the file system holding ${dataDir} has`);
    } finally {
      await store.close();
      await rm(path.join(mountPoint, 'filler'), { force: true });
    }
  });
});
