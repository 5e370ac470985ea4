import { readdir } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';

/** Every regular file below `dir`, for the secrets scans of data directories. */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full)));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

/** Accounts in a data dir's SQLite store (read only): what a start that failed must not have made. */
export function accountsIn(dataDir: string): number {
  const db = new Database(path.join(dataDir, 'tokenproxy.db'), { readonly: true });
  try {
    return (db.prepare('select count(*) as n from accounts').get() as { n: number }).n;
  } finally {
    db.close();
  }
}
