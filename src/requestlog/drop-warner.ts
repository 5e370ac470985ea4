import type { Logger } from 'pino';
import type { DropReason } from './batcher.js';
import { DROP_WARNING_INTERVAL_MS } from './batcher.js';

/**
 * Losses of the log queues, told in at most one warning per interval: a flood drops records on
 * every write, and one line per drop would be a second flood. Counts only, never the records.
 */
export class DropWarner {
  readonly #logger: Logger;
  readonly #intervalMs: number;
  #counts = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #lastWarning = Number.NEGATIVE_INFINITY;

  constructor(logger: Logger, intervalMs = DROP_WARNING_INTERVAL_MS) {
    this.#logger = logger;
    this.#intervalMs = intervalMs;
  }

  add(queue: string, count: number, reason: DropReason): void {
    const key = `${queue} ${reason}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + count);
    if (this.#timer !== undefined) return;
    const wait = Math.max(0, this.#lastWarning + this.#intervalMs - performance.now());
    if (wait === 0) return this.report();
    this.#timer = setTimeout(() => this.report(), wait);
    this.#timer.unref();
  }

  /** Logs what was dropped since the last warning, if anything (also at shutdown). */
  report(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#counts.size === 0) return;
    // Monotonic: a wall clock stepped back must not hold the next warning back for the step.
    this.#lastWarning = performance.now();
    const dropped = [...this.#counts].map(([key, count]) => {
      const [queue, reason] = key.split(' ');
      return { queue, reason, count };
    });
    this.#counts = new Map();
    this.#logger.warn({ dropped }, 'log queues dropped records');
  }
}
