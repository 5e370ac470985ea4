import type { Logger } from 'pino';
import { errorName } from '../errors/summary.js';
import type { OnUnauthorized, UnauthorizedAttempt } from '../anomalies/record.js';
import type { EventPublisher } from '../events/publisher.js';
import type { Counters } from './counters.js';

/** DESIGN §10: at most one alert per (token, origin, ip) per minute from the last alert sent. */
export const BREACH_COALESCE_MS = 60_000;
const FLUSH_EVERY_MS = 5_000;
const MAX_TRACKED = 10_000;

export interface BreachHandlerOptions {
  readonly counters: Counters;
  /** The anomaly log: every attempt is written there, whatever the coalescing. */
  readonly anomalies: { readonly onUnauthorized: OnUnauthorized };
  readonly publisher: EventPublisher;
  readonly logger?: Logger | undefined;
  readonly now?: (() => number) | undefined;
  readonly intervalMs?: number | undefined;
  /** How often trailing alerts are checked; 0 = never on a timer (tests call `flush`). */
  readonly flushEveryMs?: number | undefined;
}

export interface BreachHandler {
  /** Wire as the proxy's `onUnauthorized`. Returns at once and never throws. */
  readonly onUnauthorized: OnUnauthorized;
  /** Sends the trailing alerts that are due: attempts left over since a key's last alert. */
  flush(now?: number): Promise<void>;
  close(): void;
}

interface Tracked {
  /** Latest attempt not covered by an alert yet, or null. */
  attempt: UnauthorizedAttempt | null;
  /** When this process last saw an alert sent for the key (or first saw the key suppressed). */
  sentAt: number;
}

/**
 * Breach actions for unauthorized proxy requests (specification §6, DESIGN §6/§10): the anomaly-log
 * entry (always) and a `breach.detected` event, from which the events module derives the webhook and
 * the e-mail, so coalescing the event coalesces both.
 *
 * Coalescing is leading-edge with a trailing summary: the first attempt for a (token, origin, ip)
 * alerts at once; attempts in the next 60 s are counted, and the next alert (a new attempt after the
 * 60 s, or the trailing one sent when the 60 s are over) carries their number in `attempts`. Attempts
 * refused with `ip_backoff` are counted into that number but never trigger an alert by themselves.
 */
export function createBreachHandler(options: BreachHandlerOptions): BreachHandler {
  const { counters, anomalies, publisher, logger } = options;
  const now = options.now ?? Date.now;
  const interval = options.intervalMs ?? BREACH_COALESCE_MS;
  const tracked = new Map<string, Tracked>();

  function publish(attempt: UnauthorizedAttempt, attempts: number): void {
    publisher
      .publish({
        accountId: attempt.accountId,
        type: 'breach.detected',
        data: {
          token_id: attempt.tokenId,
          origin: attempt.origin,
          ip: attempt.ip,
          country: attempt.country,
          path: attempt.path,
          reason: attempt.reason,
          attempts,
        },
      })
      .catch((err: unknown) => logger?.error({ err: errorName(err) }, 'breach.detected not recorded'));
  }

  function settle(key: string, attempt: UnauthorizedAttempt, at: number, covered: number): void {
    if (covered > 0) {
      publish(attempt, covered);
      const t = tracked.get(key);
      if (t === undefined) track(key, { attempt: null, sentAt: at });
      else {
        t.attempt = null;
        t.sentAt = at;
      }
      return;
    }
    const t = tracked.get(key);
    if (t === undefined) track(key, { attempt, sentAt: at });
    else t.attempt = attempt;
  }

  function track(key: string, t: Tracked): void {
    if (tracked.size >= MAX_TRACKED) {
      const oldest = tracked.keys().next();
      if (oldest.done !== true) tracked.delete(oldest.value);
    }
    tracked.set(key, t);
  }

  const onUnauthorized: OnUnauthorized = (attempt) => {
    try {
      anomalies.onUnauthorized(attempt);
      const at = now();
      const key = `${attempt.tokenId}\n${attempt.origin ?? ''}\n${attempt.ip}`;
      const covered = counters.coalesce(key, at, interval, raisesAlert(attempt));
      if (covered instanceof Promise) {
        covered.then(
          (n) => settle(key, attempt, at, n),
          (err: unknown) => logger?.error({ err: errorName(err) }, 'breach coalescing failed'),
        );
      } else {
        settle(key, attempt, at, covered);
      }
    } catch (err) {
      logger?.error({ err: errorName(err) }, 'breach handler failed');
    }
  };

  async function flush(at: number = now()): Promise<void> {
    for (const [key, t] of tracked) {
      if (at - t.sentAt < interval) continue;
      const attempt = t.attempt;
      if (attempt === null) {
        tracked.delete(key);
        continue;
      }
      t.attempt = null;
      t.sentAt = at;
      // Zero: another process's alert covered them, or the key's window is not over there yet.
      const covered = await counters.flushCoalesced(key, at, interval);
      if (covered > 0) publish(attempt, covered);
    }
  }

  const every = options.flushEveryMs ?? FLUSH_EVERY_MS;
  const timer =
    every > 0
      ? setInterval(() => {
          flush().catch((err: unknown) => logger?.error({ err: errorName(err) }, 'breach flush failed'));
        }, every)
      : undefined;
  timer?.unref();

  return {
    onUnauthorized,
    flush,
    close() {
      if (timer !== undefined) clearInterval(timer);
    },
  };
}

/** DESIGN §10: `ip_backoff` refusals are counted but alert by themselves never; see `alert`. */
export function raisesAlert(attempt: UnauthorizedAttempt): boolean {
  return attempt.alert ?? attempt.reason !== 'ip_backoff';
}
