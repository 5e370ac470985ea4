import { readFileSync } from 'node:fs';
import { open, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../config/config-error.js';
import { describeFsError } from './data-dir.js';

/**
 * One `serve` per SQLite data dir (DESIGN §9): two servers on one store would each count rate limits
 * and quotas alone, and both would deliver the outbox. The lock is a file naming the holder's pid; a
 * holder that died (kill -9, power cut) leaves it behind, so a lock whose process is gone is taken over.
 */

export const LOCK_FILE = 'serve.lock';

interface LockContent {
  readonly pid: number;
  readonly host: string;
  readonly started_at: string;
}

export interface InstanceLock {
  readonly path: string;
  release(): Promise<void>;
}

export async function acquireInstanceLock(dataDir: string, now: Date = new Date()): Promise<InstanceLock> {
  const path = join(dataDir, LOCK_FILE);
  const mine: LockContent = { pid: process.pid, host: hostname(), started_at: now.toISOString() };
  // Two tries: the second follows the removal of a stale lock.
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o600);
      try {
        await handle.writeFile(`${JSON.stringify(mine)}\n`);
      } finally {
        await handle.close();
      }
      return { path, release: () => releaseIfMine(path, mine) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new ConfigError(
          `setting data_dir: cannot create the lock file ${path} (${describeFsError(error)}); ` +
            'choose a directory this user can write with --data-dir',
        );
      }
    }
    const holder = await readHolder(path);
    if (holder !== undefined && isRunning(holder)) {
      throw new ConfigError(
        `setting data_dir: another tokenproxy serve (pid ${holder.pid} on ${holder.host}, started ` +
          `${holder.started_at}) is already serving ${dataDir}. Stop it first, or give this one its own ` +
          `--data-dir. If no such process runs any more, delete ${path}.`,
      );
    }
    await unlink(path).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    });
  }
  throw new ConfigError(
    `setting data_dir: ${path} keeps reappearing: another tokenproxy is starting on ${dataDir} at the same time`,
  );
}

async function readHolder(path: string): Promise<LockContent | undefined> {
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as Partial<LockContent>;
    if (typeof parsed.pid !== 'number' || typeof parsed.host !== 'string') return undefined;
    return { pid: parsed.pid, host: parsed.host, started_at: String(parsed.started_at) };
  } catch {
    // Empty or torn: its writer died between creating and writing it.
    return undefined;
  }
}

/** A lock of another host cannot be checked from here, so it counts as held. */
function isRunning(holder: LockContent): boolean {
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // The pid may have been reused by an unrelated program since the holder died.
  try {
    return readFileSync(`/proc/${holder.pid}/cmdline`, 'utf8').includes('node');
  } catch {
    return true;
  }
}

async function releaseIfMine(path: string, mine: LockContent): Promise<void> {
  const holder = await readHolder(path);
  if (holder?.pid !== mine.pid || holder.started_at !== mine.started_at) return;
  await unlink(path).catch(() => undefined);
}
