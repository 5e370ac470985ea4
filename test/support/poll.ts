import { setTimeout as sleep } from 'node:timers/promises';

/**
 * For what a test cannot await: work the code under test does in the background (a log line, a
 * stored row, a Redis reconnect, a restarted worker) with no event to listen for. Bounded, so a
 * broken feature fails its test instead of hanging it, and the error names what was awaited, so the
 * failure says which wait gave up. `undefined` and `false` mean "not yet": a probe returns either the
 * value the test goes on with or a plain boolean.
 */
export async function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 10_000, everyMs = 50 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
