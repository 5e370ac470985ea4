import { stat } from 'node:fs/promises';

/**
 * A SQLite file deleted, moved away or replaced under a running server goes unnoticed by SQLite: it
 * keeps the file it opened and writes on into it, outside the data dir, so all of it is lost when the
 * server stops (and a restored backup put in its place is not seen). This watches the paths of the
 * store's file and of its write-ahead log and says when either no longer names the file this
 * process has open. Only `stat` on the path, never an open: closing a descriptor of the database
 * file would drop this process's SQLite locks on it (see openFile in sqlite.ts).
 */

/** How often the paths are looked at: cheap (a stat each), and soon enough to refuse the next changes. */
export const FILE_CHECK_INTERVAL_MS = 2000;

/** What a path shows against the file opened there: gone from it, or another file in its place. */
export type FileChange = 'missing' | 'replaced';

export interface FileId {
  readonly dev: bigint;
  readonly ino: bigint;
}

/** `database`: tokenproxy.db; `wal`: its -wal, which holds the latest commits until a checkpoint. */
export type StoreFileRole = 'database' | 'wal';

export interface StoreFileLoss {
  readonly change: FileChange;
  readonly role: StoreFileRole;
  /** The path that no longer names the open file. */
  readonly path: string;
}

/**
 * The rule: `opened` is the file this process has open (undefined: none seen yet, as for a -wal
 * SQLite has not made yet), `now` what the path names now (undefined: nothing).
 */
export function fileChange(opened: FileId | undefined, now: FileId | undefined): FileChange | undefined {
  if (opened === undefined) return undefined;
  if (now === undefined) return 'missing';
  return now.dev === opened.dev && now.ino === opened.ino ? undefined : 'replaced';
}

/** What is stored, what is lost and what to do: one line an operator can act on. */
export function lossMessage(loss: StoreFileLoss, database: string): string {
  const refused =
    'Changes through the management API are refused (503 store_unavailable) and /readyz answers ' +
    `503 store_file_${loss.change}.`;
  if (loss.role === 'wal') {
    const what = loss.change === 'missing' ? 'was deleted' : 'was replaced by another file';
    return (
      `the SQLite store's write-ahead log ${loss.path} ${what} while the server runs: its latest changes ` +
      'are now only in the file this server has open, so a crash would lose them, and another process ' +
      `opening the store (a tokenproxy command) would not see them and could corrupt it. ${refused} ` +
      `Restart the server, running no tokenproxy command on this data dir before: a clean stop writes them into ${database}.`
    );
  }
  // Left in place, SQLite would apply the old file's log to whatever file the next start finds.
  const cleanup = `remove ${database}-wal and ${database}-shm, which belong to the file this server had open`;
  if (loss.change === 'missing') {
    return (
      `the SQLite store ${database} was deleted or moved away while the server runs: SQLite goes on with the ` +
      'file it opened, which is no longer in the data dir, so what is stored from now on is lost when the ' +
      `server stops. ${refused} Move the file back to resume with nothing lost. If it was deleted, its content ` +
      `goes when the server stops: stop it, ${cleanup}, put the last backup at ${database} (or nothing, for a ` +
      'new, empty store) and start it.'
    );
  }
  return (
    `the SQLite store ${database} was replaced by another file while the server runs (a restored backup?): ` +
    'this server still reads and writes the file it opened, which is no longer in the data dir, so what it ' +
    `stores from now on is lost when it stops, and it does not see the new file. ${refused} Stop the server, ` +
    `${cleanup}, and start it to serve the file now at ${database}.`
  );
}

/** A line for the operator's log: `error` when a file is lost, `info` when it is back. */
export interface StoreFileNotice {
  readonly level: 'error' | 'info';
  readonly path: string;
  readonly message: string;
}

export type StoreFileReport = (notice: StoreFileNotice) => void;

/** The notice of a change of the watch's verdict (`loss` undefined: every path names its file again). */
export function noticeOf(loss: StoreFileLoss | undefined, database: string): StoreFileNotice {
  if (loss !== undefined) return { level: 'error', path: loss.path, message: lossMessage(loss, database) };
  return {
    level: 'info',
    path: database,
    message: `the SQLite store ${database} and its write-ahead log are again the files this server has open: changes are accepted again`,
  };
}

export interface StoreFileWatch {
  /** The first path that no longer names its open file, as of the last look; undefined when all do. */
  current(): StoreFileLoss | undefined;
  stop(): void;
}

export interface WatchOptions {
  /** The path of tokenproxy.db; its -wal is beside it. */
  readonly database: string;
  /** The files this process opened at those paths (undefined: none seen yet). */
  readonly opened: { readonly database: FileId | undefined; readonly wal: FileId | undefined };
  /** Told of every change of `current()`: to a loss, to another loss, and back to none. */
  readonly onChange: (loss: StoreFileLoss | undefined) => void;
  readonly intervalMs?: number | undefined;
}

/** What `path` names now; undefined when nothing does, `unknown` when it cannot be told (EACCES). */
export async function fileIdOf(path: string): Promise<FileId | undefined | 'unknown'> {
  try {
    const stats = await stat(path, { bigint: true });
    return { dev: stats.dev, ino: stats.ino };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? undefined : 'unknown';
  }
}

/** Looks every `intervalMs`, on an unref'd timer: it never keeps the process alive. */
export function watchStoreFiles(options: WatchOptions): StoreFileWatch {
  const { database } = options;
  const files: { role: StoreFileRole; path: string; opened: FileId | undefined }[] = [
    { role: 'database', path: database, opened: options.opened.database },
    // SQLite keeps the -wal while any connection is open; one not seen at the start (none made yet)
    // is this process's when first seen.
    { role: 'wal', path: `${database}-wal`, opened: options.opened.wal },
  ];
  let loss: StoreFileLoss | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function look(): Promise<void> {
    let found: StoreFileLoss | undefined;
    for (const file of files) {
      const now = await fileIdOf(file.path);
      // A path that cannot be looked at says nothing: the last verdict stands.
      if (now === 'unknown') return;
      if (file.opened === undefined) file.opened = now;
      const change = fileChange(file.opened, now);
      if (change !== undefined) {
        found = { change, role: file.role, path: file.path };
        break;
      }
    }
    if (stopped || same(found, loss)) return;
    loss = found;
    options.onChange(loss);
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      // A throw from onChange (the pragma, the reporter) must not become an unhandled rejection,
      // which would end the process: the next look tries again.
      void look()
        .catch(() => undefined)
        .finally(schedule);
    }, options.intervalMs ?? FILE_CHECK_INTERVAL_MS);
    timer.unref();
  }
  schedule();

  return {
    current: () => loss,
    stop(): void {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}

function same(a: StoreFileLoss | undefined, b: StoreFileLoss | undefined): boolean {
  return a?.change === b?.change && a?.role === b?.role;
}
