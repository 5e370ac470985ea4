import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  fileChange,
  fileIdOf,
  lossMessage,
  watchStoreFiles,
  type FileId,
  type StoreFileLoss,
  type StoreFileNotice,
} from '../../src/store/dialects/sqlite-file-watch.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { newAccount } from './helpers.js';

const A: FileId = { dev: 1n, ino: 10n };

describe('whether a path still names the file opened there', () => {
  it.each<[string, FileId | undefined, FileId | undefined, ReturnType<typeof fileChange>]>([
    ['the same file', A, { dev: 1n, ino: 10n }, undefined],
    ['nothing at the path', A, undefined, 'missing'],
    ['another file (another inode)', A, { dev: 1n, ino: 11n }, 'replaced'],
    ['another file (same inode, another device)', A, { dev: 2n, ino: 10n }, 'replaced'],
    ['none opened yet (a -wal not made yet), nothing there', undefined, undefined, undefined],
    ['none opened yet, a file there (the first one seen)', undefined, A, undefined],
  ])('%s', (_name, opened, now, expected) => {
    expect(fileChange(opened, now)).toBe(expected);
  });

  it.each([
    ['database', 'missing', ['deleted or moved away', 'Move the file back', 'remove /d/tokenproxy.db-wal']],
    ['database', 'replaced', ['replaced by another file', 'Stop the server', 'remove /d/tokenproxy.db-wal']],
    ['wal', 'missing', ['/d/tokenproxy.db-wal was deleted', 'Restart the server', 'into /d/tokenproxy.db']],
    ['wal', 'replaced', ['/d/tokenproxy.db-wal was replaced', 'Restart the server']],
  ] as const)('the %s %s: what is lost, what is refused and what to do', (role, change, words) => {
    const path = role === 'wal' ? '/d/tokenproxy.db-wal' : '/d/tokenproxy.db';
    const message = lossMessage({ role, change, path }, '/d/tokenproxy.db');
    for (const word of words) expect(message).toContain(word);
    expect(message).toContain('503 store_unavailable');
    expect(message).toContain(`/readyz answers 503 store_file_${change}`);
  });
});

/** Two looks of the watch (2 s apart) and some room. */
const NOTICED_MS = 10_000;

describe('a SQLite store watching its files', () => {
  let dataDir: string;
  let file: string;
  const stores: Store[] = [];
  const notices: StoreFileNotice[] = [];

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-file-watch-'));
    file = path.join(dataDir, 'tokenproxy.db');
    notices.length = 0;
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function open(watch: boolean): Promise<Store> {
    const store = await openStore({
      database: undefined,
      dataDir,
      ...(watch ? { watchFile: (notice: StoreFileNotice) => void notices.push(notice) } : {}),
    });
    stores.push(store);
    return store;
  }

  it('a deleted -wal: noticed once, changes refused, reads go on; a clean stop keeps every change', async () => {
    const store = await open(true);
    await newAccount(store);
    await rm(`${file}-wal`);
    await vi.waitFor(
      () => expect(store.fileLoss?.()).toEqual({ change: 'missing', role: 'wal', path: `${file}-wal` }),
      {
        timeout: NOTICED_MS,
        interval: 100,
      },
    );
    const refused = await newAccount(store).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StoreUnavailableError);
    expect((refused as StoreUnavailableError).reason).toBe('file_missing');
    expect((refused as Error).message).toContain(`${file}-wal is gone from its path`);
    expect(await store.accounts.count()).toBe(1);
    expect(notices.map(({ level, path }) => ({ level, path }))).toEqual([
      { level: 'error', path: `${file}-wal` },
    ]);
    expect(notices[0]?.message).toContain('was deleted');

    await store.close();
    const reopened = await open(false);
    expect(await reopened.accounts.count()).toBe(1);
  });

  it('a file moved away and back: refused meanwhile, accepted again, one notice each way', async () => {
    const store = await open(true);
    await newAccount(store);
    await rename(file, `${file}.away`);
    await vi.waitFor(() => expect(store.fileLoss?.()?.change).toBe('missing'), {
      timeout: NOTICED_MS,
      interval: 100,
    });
    await expect(newAccount(store)).rejects.toBeInstanceOf(StoreUnavailableError);
    await rename(`${file}.away`, file);
    await vi.waitFor(() => expect(store.fileLoss?.()).toBeUndefined(), {
      timeout: NOTICED_MS,
      interval: 100,
    });
    await newAccount(store);
    expect(await store.accounts.count()).toBe(2);
    expect(notices.map((notice) => notice.level)).toEqual(['error', 'info']);
  });

  it('without watchFile (the log writer’s and the commands’ connections), nothing is watched or refused', async () => {
    const store = await open(false);
    await rename(file, `${file}.away`);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(store.fileLoss?.()).toBeUndefined();
    await newAccount(store);
  });
});

describe('a watch whose listener throws', () => {
  it('goes on looking: the throw is not an unhandled rejection that would end the process', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-watch-throw-'));
    const file = path.join(dir, 'tokenproxy.db');
    try {
      await writeFile(file, 'x');
      await writeFile(`${file}-wal`, 'x');
      const [database, wal] = await Promise.all([fileIdOf(file), fileIdOf(`${file}-wal`)]);
      const told: (StoreFileLoss | undefined)[] = [];
      const watch = watchStoreFiles({
        database: file,
        opened: { database: database as FileId, wal: wal as FileId },
        intervalMs: 10,
        onChange(loss) {
          told.push(loss);
          // The first notice fails (a pragma on a connection closing, say).
          if (told.length === 1) throw new Error('the reporter failed');
        },
      });
      await rename(file, `${file}.moved`);
      await vi.waitFor(() => expect(told).toHaveLength(1), { timeout: 2000 });
      await rename(`${file}.moved`, file);
      await vi.waitFor(() => expect(told).toHaveLength(2), { timeout: 2000 });
      expect(told[1]).toBeUndefined();
      watch.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
