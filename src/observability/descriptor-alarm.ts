import type { Logger } from 'pino';
import type { ConnectionLimits } from '../config/connection-limits.js';

/** At most one line of each kind per minute: a flood refuses or fails on every connection. */
export const DESCRIPTOR_ALARM_INTERVAL_MS = 60_000;

/** Where the process met a full descriptor table (EMFILE, ENFILE): a closed set, for logs. */
export type ExhaustedAt = 'accept' | 'upstream_connect';

/** What an alarm writes with: pino's logger, or Fastify's (the same underneath). */
export type AlarmLogger = Pick<Logger, 'warn' | 'error'>;

/** The listener an alarm speaks for. */
export type Listener = 'proxy' | 'api';

const EXHAUSTED_CODES: ReadonlySet<string> = new Set(['EMFILE', 'ENFILE']);

/** The process (EMFILE) or the whole system (ENFILE) has no descriptor left. */
export function isDescriptorExhaustion(code: string | undefined): boolean {
  return code !== undefined && EXHAUSTED_CODES.has(code);
}

/**
 * Tells the operator, once and then at most once a minute with a count, that connections are being
 * refused at the proxy's cap or that the process ran out of descriptors, and what to change. The
 * first occurrence is logged at once; those that follow within the interval are counted and
 * reported when it ends. Counting is all a refused connection costs here.
 */
export class DescriptorAlarm {
  readonly #logger: AlarmLogger | undefined;
  readonly #limits: ConnectionLimits;
  readonly #listener: Listener;
  readonly #capped: Pending;
  readonly #exhausted: Pending;
  #exhaustedAt: ExhaustedAt = 'accept';
  #exhaustedCode = '';

  constructor(
    logger: AlarmLogger | undefined,
    limits: ConnectionLimits,
    listener: Listener,
    intervalMs = DESCRIPTOR_ALARM_INTERVAL_MS,
  ) {
    this.#logger = logger;
    this.#limits = limits;
    this.#listener = listener;
    this.#capped = new Pending(intervalMs, (count) => this.#warnCapped(count));
    this.#exhausted = new Pending(intervalMs, (count) => this.#warnExhausted(count));
  }

  /** A connection was closed at accept: the listener holds its cap. */
  connectionRefused(): void {
    this.#capped.add();
  }

  /** A descriptor could not be had (EMFILE or ENFILE) where the process needed one. */
  exhausted(at: ExhaustedAt, code: string): void {
    this.#exhaustedAt = at;
    this.#exhaustedCode = code;
    this.#exhausted.add();
  }

  /** Reports what was counted since the last line (at shutdown). */
  flush(): void {
    this.#capped.report();
    this.#exhausted.report();
  }

  #warnCapped(count: number): void {
    if (this.#listener === 'api') {
      this.#logger?.warn(
        { listener: 'api', refused: count, max_connections: this.#limits.api ?? null },
        'management connections at their cap (a share of the descriptor limit): new connections are closed at accept ' +
          'until open ones end. If this is real traffic, raise the descriptor limit (LimitNOFILE).',
      );
      return;
    }
    this.#logger?.warn(
      {
        listener: 'proxy',
        refused: count,
        proxy_max_connections: this.#limits.proxy ?? null,
        descriptor_limit: this.#limits.descriptorLimit ?? null,
      },
      'proxy connections at proxy_max_connections: new connections are closed at accept until open ones end. ' +
        'If this is real traffic, raise the descriptor limit (LimitNOFILE) and with it proxy_max_connections, or add instances.',
    );
  }

  #warnExhausted(count: number): void {
    this.#logger?.error(
      {
        listener: this.#listener,
        at: this.#exhaustedAt,
        error_code: this.#exhaustedCode,
        failures: count,
        descriptor_limit: this.#limits.descriptorLimit ?? null,
        proxy_max_connections: this.#limits.proxy ?? null,
        upstream_max_connections: this.#limits.upstream ?? null,
      },
      'the process ran out of file descriptors: connections and files fail until some close. ' +
        'Raise the descriptor limit (LimitNOFILE), or lower proxy_max_connections and upstream_max_connections.',
    );
  }
}

/** One kind of line: when it was last written, and how many happened since. */
class Pending {
  readonly #intervalMs: number;
  readonly #write: (count: number) => void;
  #count = 0;
  #last = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;

  constructor(intervalMs: number, write: (count: number) => void) {
    this.#intervalMs = intervalMs;
    this.#write = write;
  }

  add(): void {
    this.#count++;
    if (this.#timer !== undefined) return;
    // Monotonic: a wall clock stepped back must not hold the next line back for the step.
    const wait = this.#last + this.#intervalMs - performance.now();
    if (wait <= 0) return this.report();
    this.#timer = setTimeout(() => this.report(), wait);
    this.#timer.unref();
  }

  report(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#count === 0) return;
    this.#last = performance.now();
    const count = this.#count;
    this.#count = 0;
    this.#write(count);
  }
}
