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

/**
 * `until`'s options for these suites: what they wait for (a worker forked again, a lease run out, a
 * delivery by another process) takes seconds, and some probes run `ss` or scrape /metrics.
 */
export const SLOW_POLL = { timeoutMs: 60_000, everyMs: 250 };
