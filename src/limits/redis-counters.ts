import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../cluster/redis-connection.js';
import { remainingWait } from '../rules/clock-steps.js';
import type { BackoffPolicy, Counters, Reservation, Strike, WindowCount } from './counters.js';
import {
  ADD,
  COALESCE,
  FLUSH,
  HIT,
  POOL_SUMMARY,
  RESERVE,
  SEED,
  STRIKE,
  TAKE_SUMMARY,
  type LuaScript,
} from './redis-scripts.js';
import { SUMMARY_DISTINCT_MAX, type SummaryPart } from './summary-part.js';

/** Every key of tokenproxy in a shared Redis starts with this (one Redis may serve other programs). */
export const KEY_PREFIX = 'tokenproxy:';

/**
 * Counters shared by every process on one Redis (DESIGN §9): each operation is one Lua script
 * (redis-scripts.ts), so limits are exact across the cluster and answer exactly what MemoryCounters
 * answers for the same calls. Every call returns a promise, which rejects at once when Redis is
 * down (the connection's offline queue is off): FallbackCounters handles that.
 *
 * The whole logical key is the hash tag (`tokenproxy:{rl:…}`), so each key lives in one Redis Cluster
 * slot, and a key of one operation never straddles two.
 */
export class RedisCounters implements Counters {
  readonly #client: RedisClient;
  /**
   * Names this process's clock in what it stores: a window or an alert time it wrote can be corrected
   * after its own clock stepped back, never one another member wrote (rules/clock-steps.ts).
   */
  readonly #member: string;

  constructor(client: RedisClient, member: string = randomBytes(8).toString('hex')) {
    this.#client = client;
    this.#member = member;
  }

  async hit(key: string, windowMs: number, now: number): Promise<WindowCount> {
    const [count, resetAt] = (await this.#run(HIT, key, now, windowMs, this.#member)) as [string, string];
    return { count: Number(count), resetAt: Number(resetAt) };
  }

  async seed(key: string, value: number, expiresAt: number, now: number): Promise<number> {
    return Number(await this.#run(SEED, key, now, value, expiresAt));
  }

  async add(key: string, by: number, expiresAt: number, now: number): Promise<number> {
    return Number(await this.#run(ADD, key, now, by, expiresAt));
  }

  async reserve(
    key: string,
    amount: number,
    limit: number,
    expiresAt: number,
    now: number,
  ): Promise<Reservation> {
    const [ok, total] = (await this.#run(RESERVE, key, now, amount, limit, expiresAt)) as [number, string];
    return { ok: ok === 1, total: Number(total) };
  }

  async strike(key: string, now: number, policy: BackoffPolicy): Promise<Strike> {
    const [blocked, waitMs] = (await this.#run(
      STRIKE,
      key,
      now,
      policy.baseMs,
      policy.maxMs,
      policy.resetAfterMs,
    )) as [number, string];
    return { blocked: blocked === 1, waitMs: Number(waitMs) };
  }

  /** A read: one HMGET is atomic, no script needed. */
  async waiting(key: string, now: number, policy: BackoffPolicy): Promise<number> {
    const [, last, until] = await this.#client.sendCommand<[string | null, string | null, string | null]>([
      'HMGET',
      redisKey(key),
      'a',
      'l',
      'u',
    ]);
    if (last === null || until === null || now - Number(last) >= policy.resetAfterMs) return 0;
    return remainingWait(Number(last), Number(until), now);
  }

  async coalesce(key: string, now: number, intervalMs: number, trigger: boolean): Promise<number> {
    return Number(await this.#run(COALESCE, key, now, intervalMs, trigger ? 1 : 0, this.#member));
  }

  async flushCoalesced(key: string, now: number, intervalMs: number): Promise<number> {
    return Number(await this.#run(FLUSH, key, now, intervalMs, this.#member));
  }

  async poolSummary(key: string, part: SummaryPart, expiresAt: number, now: number): Promise<void> {
    const json = JSON.stringify({
      n: part.attempts,
      r: part.reasons,
      o: part.origins.map((origin) => JSON.stringify(origin)),
      i: part.ips,
      c: part.capped,
      f: part.first,
      l: part.last,
    });
    await this.#run(POOL_SUMMARY, key, now, expiresAt, SUMMARY_DISTINCT_MAX, json);
  }

  async takeSummary(key: string, now: number): Promise<SummaryPart | undefined> {
    return summaryFromHash((await this.#run(TAKE_SUMMARY, key, now)) as string[]);
  }

  /** The connection belongs to RedisConnection, which closes it. */
  close(): void {}

  /** EVALSHA, and EVAL once when Redis does not know the script (first use, restart, SCRIPT FLUSH). */
  async #run(script: LuaScript, key: string, ...args: (number | string)[]): Promise<unknown> {
    const rest = [redisKey(key), ...args.map(String)];
    try {
      return await this.#client.sendCommand(['EVALSHA', script.sha1, '1', ...rest]);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return this.#client.sendCommand(['EVAL', script.source, '1', ...rest]);
    }
  }
}

export function redisKey(key: string): string {
  return `${KEY_PREFIX}{${key}}`;
}

/** TAKE_SUMMARY's flat field list back into a part (values in the order they came); undefined when nothing was pooled. */
function summaryFromHash(flat: readonly string[]): SummaryPart | undefined {
  if (flat.length === 0) return undefined;
  const reasons: Record<string, number> = {};
  const origins: [string | null, number][] = [];
  const ips: [string, number][] = [];
  let attempts = 0;
  let capped = false;
  let first = '';
  let last = '';
  for (let j = 0; j + 1 < flat.length; j += 2) {
    const field = flat[j] as string;
    const value = flat[j + 1] as string;
    if (field === 'n') attempts = Number(value);
    else if (field === 'cap') capped = true;
    else if (field === 'f') first = value;
    else if (field === 'l') last = value;
    else if (field.startsWith('r:')) reasons[field.slice(2)] = Number(value);
    else if (field.startsWith('o:'))
      origins.push([JSON.parse(field.slice(2)) as string | null, Number(value)]);
    else if (field.startsWith('i:')) ips.push([field.slice(2), Number(value)]);
  }
  return { attempts, reasons, origins: inOrder(origins), ips: inOrder(ips), capped, first, last };
}

function inOrder<T>(ranked: [T, number][]): T[] {
  return ranked.sort((a, b) => a[1] - b[1]).map(([value]) => value);
}
