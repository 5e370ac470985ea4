import { readFileSync } from 'node:fs';

/**
 * The process's limit on open file descriptors (RLIMIT_NOFILE's soft value), which every socket,
 * file and pipe of the process counts against: accepted connections, upstream connections, the
 * store, the worker threads' files. Node raises the soft limit to the hard one at start, so what is
 * read after start is what the process really has. Node has no API for it; Linux shows it in
 * /proc/self/limits. Undefined where that file is missing (macOS) or says `unlimited`.
 */
export function readDescriptorLimit(file = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'latin1');
  } catch {
    return undefined;
  }
  return parseOpenFilesLimit(text);
}

/** The soft value of the `Max open files` row of /proc/<pid>/limits. */
export function parseOpenFilesLimit(text: string): number | undefined {
  const row = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text);
  if (row === null) return undefined;
  const soft = row[1] ?? '';
  if (!/^\d+$/.test(soft)) return undefined;
  const value = Number(soft);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}
