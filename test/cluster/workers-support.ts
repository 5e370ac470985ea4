import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

// Redis and free ports come from the cluster suites' own helpers: one redis-server helper for all.
export { freePort, startRedis, type TestRedis } from './support.js';

/**
 * Pids of the processes holding established TCP connections whose local port is `localPort` (the
 * server side) or, with `side: 'client'`, whose remote port is it. Read with `ss -tnp`, which shows
 * which process owns each socket: the way to tell which worker or process took a connection.
 */
export async function socketOwners(port: number, side: 'server' | 'client' = 'server'): Promise<number[]> {
  const filter = side === 'server' ? `sport = :${port}` : `dport = :${port}`;
  const { stdout } = await promisify(execFile)('ss', ['-tnpH', 'state', 'established', filter]);
  const pids = [...stdout.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
  return [...new Set(pids)];
}

/** Whether a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
