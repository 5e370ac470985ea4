import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from 'pino';
import { wholeMs } from '../rules/whole-ms.js';

/**
 * Gives memory back when a busy thread goes quiet (issue 17, docs/performance.md "Memory after a busy
 * spell"). Under load V8 commits pages for the young generation and the old one; once the spell is
 * over, a regular collection frees the objects but V8 keeps the pages pooled for reuse, so RSS stays
 * at its peak for as long as the process lives (~230 MB above start after the bench's load phases).
 * Only a memory-reducing collection (`last-resort`: full, compacting, releasing the pool) returns
 * them, and it is a pause of tens of ms: it runs only when the thread has had no work for a while,
 * and only after enough work that there is something to return.
 */
export interface IdleMemoryRule {
  /** No new work for at least this long. */
  readonly quietMs: number;
  /** At least this much work since the last reduction: a thread that stays quiet is left alone. */
  readonly minWork: number;
}

/**
 * 5,000 proxied requests allocate ~100 MB of garbage. The quiet minute is what the reduction costs:
 * it also drops V8's compiled code and shrinks the young generation, so the first seconds of the next
 * busy spell run slower (in the bench, with 2 s instead, a spell starting after it used ~1.6-2× the
 * CPU per request). Traffic that pauses for less than a minute never pays it.
 */
export const IDLE_MEMORY_RULE: IdleMemoryRule = Object.freeze({ quietMs: 60_000, minWork: 5_000 });

export function shouldReduceMemory(
  workSinceLastReduction: number,
  quietMs: number,
  rule: IdleMemoryRule = IDLE_MEMORY_RULE,
): boolean {
  return workSinceLastReduction >= rule.minWork && quietMs >= rule.quietMs;
}

export interface MemoryReduction {
  /** The process's resident memory before and after, in bytes. */
  readonly rssBefore: number;
  readonly rssAfter: number;
  readonly ms: number;
}

/**
 * V8's memory-reducing collection, or null where this V8 lacks it. `gc` exists only in contexts made
 * after `--expose-gc` is set, so it is taken from a fresh context rather than this one's globals. The
 * flag is process-wide: threads started later (the HSM and retention workers) see a global `gc` too;
 * nothing in tokenproxy calls one.
 */
export function memoryReducingGc(): (() => void) | null {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    if (typeof gc !== 'function') return null;
    return () =>
      void (gc as (options: object) => unknown)({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } catch {
    return null;
  }
}

export interface IdleMemoryOptions {
  readonly rule?: IdleMemoryRule | undefined;
  /** Work still under way that the counter does not see (open streams): never reduce meanwhile. */
  readonly busy?: (() => boolean) | undefined;
  readonly checkEveryMs?: number | undefined;
  readonly onReduced?: ((reduction: MemoryReduction) => void) | undefined;
}

/**
 * Watches a work counter (requests proxied, records stored) and reduces memory when the rule says so.
 * The check is one timer that keeps nothing alive; the counter is read, never reset.
 *
 * The thread's start-up counts as a busy spell. Loading the modules, building the management API and
 * opening the store leave both threads with more committed than they need (a young generation grown
 * to its maximum, start-up garbage in pooled pages): a fresh `serve` went from ~180 to ~140 MB once
 * both had given it back, which a server that gets no traffic would otherwise keep for its whole
 * life. Traffic that comes at once makes the start-up part of the first spell, returned with it.
 */
export function startIdleMemoryReducer(
  work: () => number,
  options: IdleMemoryOptions = {},
): { stop(): void } {
  const gc = memoryReducingGc();
  if (gc === null) return { stop: () => undefined };
  const rule = options.rule ?? IDLE_MEMORY_RULE;
  let seen = work();
  let changedAt = performance.now();
  let atLastReduction = seen - rule.minWork;
  const timer = setInterval(() => {
    const now = performance.now();
    const count = work();
    if (count !== seen || options.busy?.() === true) {
      seen = count;
      changedAt = now;
      return;
    }
    const quietMs = now - changedAt;
    if (!shouldReduceMemory(count - atLastReduction, quietMs, rule)) {
      // A quiet spell ends the busy one: a trickle of work over hours is not a busy spell.
      if (quietMs >= rule.quietMs) atLastReduction = count;
      return;
    }
    atLastReduction = count;
    const rssBefore = process.memoryUsage.rss();
    gc();
    options.onReduced?.({ rssBefore, rssAfter: process.memoryUsage.rss(), ms: performance.now() - now });
  }, options.checkEveryMs ?? 500);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** The reducer's report for the server's log: debug level, at most once per busy spell. */
export function logReduction(logger: Logger, thread: string): (r: MemoryReduction) => void {
  const mb = (bytes: number): number => Math.round(bytes / 1_048_576);
  return (r) =>
    logger.debug(
      { thread, rss_mb_before: mb(r.rssBefore), rss_mb_after: mb(r.rssAfter), pause_ms: wholeMs(r.ms) },
      'returned memory after a busy spell',
    );
}
