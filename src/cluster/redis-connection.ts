import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { createClient, ErrorReply, type RedisClientType } from '@redis/client';
import type { Logger } from 'pino';
import { redactRedisUrl } from './redis-url.js';

/**
 * The one owner of this process's Redis connections (DESIGN §9): a command connection for the
 * counters and publishing, and a subscriber for invalidations (a subscribed connection takes no other
 * commands). Both reconnect by themselves with capped exponential backoff.
 *
 * A request never waits for Redis to come back: the offline queue is off, so a command while the
 * connection is down fails at once, and every command has a short timeout for a Redis that hangs.
 * The callers (FallbackCounters, the invalidation bus) turn those failures into per-process work.
 */

/** A command that has not answered by then counts as failed (the request goes on without Redis). */
export const REDIS_COMMAND_TIMEOUT_MS = 500;
const CONNECT_TIMEOUT_MS = 5_000;
const RECONNECT_BASE_MS = 100;
const RECONNECT_MAX_MS = 5_000;
const PROBE_BASE_MS = 1_000;
const PROBE_MAX_MS = 30_000;
/** Failing again sooner than this after a recovery is a relapse: the next probe waits longer. */
const STABLE_AFTER_MS = 60_000;
/**
 * What the probe runs before Redis counts as back: a Lua script that writes, like every counter
 * operation. A PING also answers on a Redis that refuses writes (maxmemory reached, a read-only
 * replica) or scripts (an ACL), and trusting it made such a Redis flap up and down every second.
 */
const PROBE_SCRIPT = "return redis.call('SET', KEYS[1], '1', 'PX', '10000')";
const PROBE_KEY = 'tokenproxy:{probe}';

/** Wait before the next probe after `relapses` failures soon after a recovery: 1 s doubling to 30 s. */
export function probeDelayMs(relapses: number): number {
  return Math.min(PROBE_BASE_MS * 2 ** Math.min(relapses, 16), PROBE_MAX_MS);
}

export interface RedisSettings {
  /** `redis://` or `rediss://` URL (secret: it may hold a password; never logged). */
  readonly url: string;
  /** Extra CAs (PEM file) trusted for `rediss://`, besides the public ones. */
  readonly ca?: string | undefined;
}

export type RedisClient = RedisClientType;

export interface RedisConnection {
  /** The command connection. Check `up` first; commands while down reject at once. */
  readonly client: RedisClient;
  /** The command connection is connected and ready. */
  readonly up: boolean;
  /** REDIS_COMMAND_TIMEOUT_MS: callers time their own commands (node-redis's timeout stops at the write). */
  readonly commandTimeoutMs: number;
  /** Called with true when the command connection becomes ready, false when it is lost. */
  onChange(listener: (up: boolean) => void): void;
  /**
   * A command failed or timed out while the connection looked ready (a Redis that hangs, or one that
   * answers with errors): counts as down until a probe write succeeds again, so requests stop
   * waiting for command timeouts meanwhile. The probe backs off while Redis keeps relapsing.
   */
  suspect(err: unknown): void;
  /**
   * Subscribes to `channel`. `onResync` is called each time the subscription comes back after being
   * lost (messages may have been missed meanwhile), not on the first connection.
   */
  subscribe(channel: string, onMessage: (message: string) => void, onResync: () => void): void;
  close(): Promise<void>;
}

/** Wait before reconnect attempt `retries` (0-based): 100 ms doubling to 5 s, with jitter. */
export function reconnectDelayMs(retries: number, random: () => number = Math.random): number {
  const base = Math.min(RECONNECT_BASE_MS * 2 ** Math.min(retries, 16), RECONNECT_MAX_MS);
  // Up to 20 % less, so the processes of a cluster do not reconnect in lockstep.
  return Math.round(base * (1 - 0.2 * random()));
}

/**
 * Creates both connections and starts connecting in the background: the server starts whether or
 * not Redis answers (DESIGN §9), logging one warning per lost/regained transition.
 */
export function connectRedis(settings: RedisSettings, logger: Logger): RedisConnection {
  const tls = settings.url.startsWith('rediss:');
  const ca =
    tls && settings.ca !== undefined ? [...rootCertificates, readFileSync(settings.ca, 'utf8')] : undefined;
  const client = createClient({
    url: settings.url,
    disableOfflineQueue: true,
    commandOptions: { timeout: REDIS_COMMAND_TIMEOUT_MS },
    socket: {
      connectTimeout: CONNECT_TIMEOUT_MS,
      reconnectStrategy: (retries) => reconnectDelayMs(retries),
      ...(ca === undefined ? {} : { tls: true as const, ca }),
    },
  }) as RedisClient;
  const subscriber = client.duplicate();
  const where = redactRedisUrl(settings.url);
  const listeners: Array<(up: boolean) => void> = [];
  let up = false;
  let everUp = false;
  let closed = false;
  let recoveredAt = -Infinity;
  let relapses = 0;

  const set = (now: boolean, err?: unknown): void => {
    if (now === up || closed) return;
    up = now;
    if (now) {
      if (everUp) logger.warn({ redis: where }, 'Redis is back: limits are shared across the cluster again');
      else logger.info({ redis: where }, 'connected to Redis');
      everUp = true;
    } else if (err instanceof ErrorReply) {
      logger.warn(
        { redis: where, err: errorText(err), next_check_ms: probeDelayMs(relapses) },
        'Redis answers commands with an error: limits are counted per process until it accepts them again',
      );
    } else {
      logger.warn(
        { redis: where, err: errorText(err) },
        'Redis is unreachable: limits are counted per process until it returns; retrying in the background',
      );
    }
    for (const listener of listeners) listener(now);
  };
  // node-redis emits 'error' for every failed reconnect attempt; the transitions are what we log.
  client.on('error', (err: unknown) => set(false, err));
  client.on('end', () => set(false));
  subscriber.on('error', () => undefined);

  let warnedAtStart = false;
  const warnUnreachable = (err: unknown): void => {
    if (!everUp && !closed && !warnedAtStart) {
      warnedAtStart = true;
      logger.warn(
        { redis: where, err: errorText(err) },
        'Redis is unreachable at start: starting anyway with per-process limits; retrying in the background',
      );
    }
  };
  // A Redis that accepts the connection and then says nothing (a stopped host) raises no error.
  setTimeout(
    () => warnUnreachable(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)),
    CONNECT_TIMEOUT_MS,
  ).unref();
  /** The probe write: what every counter operation needs Redis to accept. */
  const write = (): Promise<void> =>
    client.sendCommand(['EVAL', PROBE_SCRIPT, '1', PROBE_KEY]).then(() => undefined);
  const recovered = (): void => {
    recoveredAt = performance.now();
    set(true);
  };
  let probing: NodeJS.Timeout | undefined;
  const probe = (): void => {
    if (probing !== undefined || closed) return;
    const next = (): void => {
      probing = setTimeout(() => {
        if (closed) return;
        // Not ready: the reconnect and its 'ready' event bring the connection back instead.
        if (!client.isReady) return next();
        write().then(
          () => {
            probing = undefined;
            if (!closed) recovered();
          },
          () => next(),
        );
      }, probeDelayMs(relapses));
      probing.unref();
    };
    next();
  };
  // A (re)connection counts only once a write passes: a failover can land on a read-only replica.
  client.on('ready', () => {
    write().then(recovered, (err: unknown) => {
      if (closed) return;
      logger.warn(
        { redis: where, err: errorText(err) },
        "Redis is connected but refuses tokenproxy's commands: limits are counted per process until it accepts them",
      );
      probe();
    });
  });
  client.connect().catch(warnUnreachable);
  // The first failed attempt is reported at once; connect() itself keeps retrying.
  client.once('error', warnUnreachable);
  subscriber.connect().catch(() => undefined);

  return {
    client,
    get up() {
      return up;
    },
    commandTimeoutMs: REDIS_COMMAND_TIMEOUT_MS,
    onChange(listener) {
      listeners.push(listener);
    },
    suspect(err) {
      if (!up) return;
      relapses = performance.now() - recoveredAt < STABLE_AFTER_MS ? relapses + 1 : 0;
      set(false, err);
      probe();
    },
    subscribe(channel, onMessage, onResync) {
      let subscribedOnce = false;
      let lost = false;
      subscriber.on('end', () => (lost = true));
      subscriber.on('error', () => (lost = subscribedOnce));
      subscriber.on('ready', () => {
        // node-redis resubscribes by itself on reconnect; what was published meanwhile is lost.
        if (lost) onResync();
        lost = false;
      });
      const attempt = (): void => {
        if (closed) return;
        subscriber
          .subscribe(channel, (message) => onMessage(message))
          .then(
            () => (subscribedOnce = true),
            // Not connected yet: the offline queue is off, so try again once it is.
            () => subscriber.once('ready', attempt),
          );
      };
      attempt();
    },
    async close() {
      closed = true;
      clearTimeout(probing);
      for (const c of [client, subscriber]) {
        try {
          c.destroy();
        } catch {
          // Never connected: nothing to destroy.
        }
      }
      await Promise.resolve();
    },
  };
}

function errorText(err: unknown): string | undefined {
  if (err === undefined) return undefined;
  // Redis errors carry no secret, but a connection error's message may repeat the host; keep it short.
  return err instanceof Error ? err.message.slice(0, 200) : 'unknown error';
}
