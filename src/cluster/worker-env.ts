/**
 * What the primary of `serve --workers N` tells each worker through its environment.
 *
 * The worker's slot, 1…N: it names the worker in its own log lines as the primary's lines name it,
 * and a replacement keeps its slot's number (node:cluster's worker ids keep growing with every
 * restart).
 */
export const WORKER_SLOT_ENV = 'TOKENPROXY_WORKER_SLOT';

/**
 * Set when the primary generated the self-signed certificate the workers load, so the banner (a
 * worker's, printed by the primary) says "generated" as a single `serve` would, not "loaded".
 */
export const CERTIFICATE_GENERATED_ENV = 'TOKENPROXY_WORKER_CERTIFICATE_GENERATED';

export function workerSlot(env: Readonly<Record<string, string | undefined>>): number | undefined {
  const slot = Number(env[WORKER_SLOT_ENV]);
  return Number.isInteger(slot) && slot > 0 ? slot : undefined;
}

export function certificateGeneratedByPrimary(env: Readonly<Record<string, string | undefined>>): boolean {
  return env[CERTIFICATE_GENERATED_ENV] === '1';
}
