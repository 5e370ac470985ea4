/**
 * A `--workers` worker's slot, 1…N, set by the primary in the worker's environment: it names the
 * worker in its own log lines as the primary's lines name it, and a replacement keeps its slot's
 * number (node:cluster's worker ids keep growing with every restart).
 */
export const WORKER_SLOT_ENV = 'TOKENPROXY_WORKER_SLOT';

export function workerSlot(env: Readonly<Record<string, string | undefined>>): number | undefined {
  const slot = Number(env[WORKER_SLOT_ENV]);
  return Number.isInteger(slot) && slot > 0 ? slot : undefined;
}
