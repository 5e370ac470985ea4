import { readFileSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rmdir, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../config/config-error.js';
import { describeFsError } from './data-dir.js';
import { StoreUnavailableError } from '../store/errors.js';

/**
 * One `serve` per SQLite data dir without `redis` (DESIGN §9): two servers on one store would each
 * count rate limits and quotas alone, and both would deliver the outbox. The lock is a file naming
 * the holder's pid; a holder that died (kill -9, power cut) leaves it behind, so a lock whose process
 * is gone is taken over.
 *
 * With `redis` any number of processes serve the store as one cluster; each leaves a file of its own
 * in `serve.members/`. The two kinds exclude each other: a process without `redis` beside a cluster
 * would count limits alone too. Each side writes its own file first and looks for the other's after,
 * so of two starting at the same moment at least one sees the other.
 */

export const LOCK_FILE = 'serve.lock';
export const MEMBERS_DIR = 'serve.members';

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
      const release = (): Promise<void> => releaseIfMine(path, mine);
      const live = await liveMember(dataDir);
      if (live !== undefined) {
        await release();
        const { member, file } = live;
        throw new ConfigError(
          `setting redis: a tokenproxy cluster (processes with redis, such as pid ${member.pid} on ` +
            `${member.host}) is serving ${dataDir}. Start this one with the same --redis redis://… to ` +
            'join it, or stop them first: a process without redis would count limits alone. ' +
            `If no such process runs any more, delete ${file}.`,
        );
      }
      return { path, release };
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        if (isDiskFull(error)) throw diskFull(dataDir, path, error);
        throw new ConfigError(
          `setting data_dir: cannot create the lock file ${path} (${describeFsError(error)}); ` +
            'choose a directory this user can write with --data-dir',
        );
      }
    }
    const holder = await readHolder(path);
    if (holder !== undefined && isRunning(holder)) throw alreadyServing(holder, dataDir, path);
    await unlink(path).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    });
  }
  throw new ConfigError(
    `setting data_dir: ${path} keeps reappearing: another tokenproxy is starting on ${dataDir} at the same time`,
  );
}

/**
 * The refusal for a data dir a running `serve` holds (read-only: nothing is written), else undefined.
 * A start whose ports are busy asks first: the usual reason is that same server, which the port's
 * refusal would not name.
 */
export async function servingRefusal(dataDir: string): Promise<ConfigError | undefined> {
  const path = join(dataDir, LOCK_FILE);
  const holder = await readHolder(path);
  return holder !== undefined && isRunning(holder) ? alreadyServing(holder, dataDir, path) : undefined;
}

function alreadyServing(holder: LockContent, dataDir: string, path: string): ConfigError {
  return new ConfigError(
    `setting data_dir: another tokenproxy serve (pid ${holder.pid} on ${holder.host}, started ` +
      `${holder.started_at}) is already serving ${dataDir}. Stop it first, or give this one its own ` +
      `--data-dir. If no such process runs any more, delete ${path}.`,
  );
}

/** A `redis` member's mark on the data dir; refused while a process serves it without `redis`. */
export async function joinAsMember(dataDir: string, now: Date = new Date()): Promise<InstanceLock> {
  const dir = join(dataDir, MEMBERS_DIR);
  const mine: LockContent = { pid: process.pid, host: hostname(), started_at: now.toISOString() };
  const path = join(dir, `${mine.host}-${mine.pid}.json`);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeAll(path, `${JSON.stringify(mine)}\n`);
  } catch (error) {
    if (isDiskFull(error)) throw diskFull(dataDir, path, error);
    throw new ConfigError(
      `setting data_dir: cannot write ${path} (${describeFsError(error)}); ` +
        'choose a directory this user can write with --data-dir',
    );
  }
  // The members' directory goes with the last member (rmdir leaves it while others are in it).
  const release = async (): Promise<void> => {
    await releaseIfMine(path, mine);
    await rmdir(dir).catch(() => undefined);
  };
  const holder = await readHolder(join(dataDir, LOCK_FILE));
  if (holder !== undefined && isRunning(holder)) {
    await release();
    throw new ConfigError(
      `setting redis: another tokenproxy serve (pid ${holder.pid} on ${holder.host}, started ` +
        `${holder.started_at}) is serving ${dataDir} without redis, counting limits alone. Stop it, or ` +
        'restart it with the same --redis redis://… so that both are members of one cluster. ' +
        `If no such process runs any more, delete ${join(dataDir, LOCK_FILE)}.`,
    );
  }
  return { path, release };
}

async function writeAll(path: string, text: string): Promise<void> {
  const handle = await open(path, 'w', 0o600);
  try {
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
}

/**
 * A live member of a `redis` cluster on this data dir, with its file; the files of members of this
 * host that died are removed (one of another host cannot be checked, and counts as live).
 */
async function liveMember(dataDir: string): Promise<{ member: LockContent; file: string } | undefined> {
  const dir = join(dataDir, MEMBERS_DIR);
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const file = join(dir, name);
    const member = await readHolder(file);
    // An empty file is one being written right now (or by a process that died doing it): not live.
    if (member === undefined) continue;
    if (isRunning(member)) return { member, file };
    await unlink(file).catch(() => undefined);
  }
  return undefined;
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
  // This very process: the file is a dead one's whose pid came round again (a container's pid 1
  // with its data dir on a volume), since this process has written none yet.
  if (holder.pid === process.pid) return false;
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

function isDiskFull(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * A full file system is not a bad setting (exit 1, not 2): the data dir is right, it only needs
 * room. Moving to another directory would start an empty store beside the real one.
 */
function diskFull(dataDir: string, path: string, error: unknown): StoreUnavailableError {
  return new StoreUnavailableError(
    `cannot write ${path}: ${describeFsError(error)} (the file system holding ${dataDir} is full). ` +
      `Free space on it (df -h ${dataDir}), then start again.`,
    { cause: error, reason: 'full' },
  );
}
