/**
 * When the primary restarts a worker that died (pure rules; src/cluster/primary.ts does the I/O).
 *
 * Each worker slot counts its crashes in a row: the first restart waits `baseMs`, each further one
 * twice as long, up to `maxMs`. A worker that stayed up `stableMs` clears its slot's count. When
 * every slot has crashed `giveUpAfter` times in a row, nothing serves and restarting cannot help
 * (a broken host, a bug hit at start): the primary stops and exits 1 so the service manager sees it.
 */
export interface RestartPolicy {
  readonly baseMs: number;
  readonly maxMs: number;
  readonly stableMs: number;
  readonly giveUpAfter: number;
}

export const RESTART_POLICY: RestartPolicy = {
  baseMs: 1000,
  maxMs: 30_000,
  stableMs: 60_000,
  giveUpAfter: 5,
};

/** The crashes in a row of a slot whose worker just died after `uptimeMs`, this one included. */
export function crashesInARow(
  previous: number,
  uptimeMs: number,
  policy: RestartPolicy = RESTART_POLICY,
): number {
  return uptimeMs >= policy.stableMs ? 1 : previous + 1;
}

/** How long to wait before restarting a slot with `crashes` crashes in a row (at least 1). */
export function restartDelayMs(crashes: number, policy: RestartPolicy = RESTART_POLICY): number {
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, crashes - 1));
}

/** True when every slot is crash-looping: time to give up rather than restart. */
export function shouldGiveUp(
  crashesBySlot: readonly number[],
  policy: RestartPolicy = RESTART_POLICY,
): boolean {
  return crashesBySlot.length > 0 && crashesBySlot.every((n) => n >= policy.giveUpAfter);
}
