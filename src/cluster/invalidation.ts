import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { errorName } from '../errors/summary.js';
import type { RedisConnection } from './redis-connection.js';

/**
 * What a change makes stale in the caches of every process (DESIGN §9):
 * - `tokens`: token lookups (revoke, revoke-all, token edit, key rotation or deletion);
 * - `accounts`: per-account state read from the store (plan, API keys), after an account change;
 * - `all`: everything (sent by nobody; applied after a Redis reconnect, when messages may be lost).
 */
export type InvalidationScope = 'tokens' | 'accounts' | 'all';

const SCOPES: ReadonlySet<string> = new Set<InvalidationScope>(['tokens', 'accounts', 'all']);
export const INVALIDATION_CHANNEL = 'tokenproxy:invalidate';

export interface Invalidation {
  /**
   * Drops what `scope` covers in this process at once (its next request reads the store) and tells
   * every other process of the cluster to do the same. Never throws and never waits: without Redis
   * the other processes' caches expire by themselves (token lookups after 1 s).
   */
  invalidate(scope: InvalidationScope): void;
}

export interface InvalidationOptions {
  /** Undefined: one process, nobody else to tell. */
  readonly connection: RedisConnection | undefined;
  /** Drops this process's cached state for `scope`. */
  readonly drop: (scope: InvalidationScope) => void;
  readonly logger?: Logger | undefined;
}

/** The message a process publishes; `from` lets a process skip its own (it dropped already). */
export function invalidationMessage(scope: InvalidationScope, from: string): string {
  return JSON.stringify({ scope, from });
}

export function parseInvalidation(message: string): { scope: InvalidationScope; from: string } | undefined {
  try {
    const parsed = JSON.parse(message) as { scope?: unknown; from?: unknown };
    if (typeof parsed.scope !== 'string' || !SCOPES.has(parsed.scope)) return undefined;
    return { scope: parsed.scope as InvalidationScope, from: String(parsed.from) };
  } catch {
    return undefined;
  }
}

export function createInvalidation(options: InvalidationOptions): Invalidation {
  const { connection, drop, logger } = options;
  const self = randomUUID();
  if (connection !== undefined) {
    connection.subscribe(
      INVALIDATION_CHANNEL,
      (message) => {
        const parsed = parseInvalidation(message);
        if (parsed === undefined || parsed.from === self) return;
        drop(parsed.scope);
        // After the drop: a line an operator (and the cluster test) can take as "this process has
        // forgotten", where the 1 s expiry would otherwise explain a refusal as well.
        logger?.debug({ scope: parsed.scope }, 'caches dropped: changed on another process');
      },
      // Changes published while the subscription was down are lost: forget everything instead.
      () => drop('all'),
    );
  }
  return {
    invalidate(scope) {
      drop(scope);
      if (connection === undefined || !connection.up) return;
      connection.client
        .sendCommand(['PUBLISH', INVALIDATION_CHANNEL, invalidationMessage(scope, self)])
        .catch((err: unknown) => {
          // The others' token caches still expire within 1 s; the failure is the connection's to report.
          connection.suspect(err);
          logger?.debug({ err: errorName(err) }, 'invalidation not published');
        });
    },
  };
}
