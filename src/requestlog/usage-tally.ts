import type { TokenUsage } from '../store/store.js';
import type { RequestLogRecord } from './record.js';

interface Entry {
  readonly tokenId: string;
  readonly accountId: string;
  /** `YYYY-MM` of the requests counted here. */
  readonly month: string;
  count: number;
  lastUsedAt: string;
}

/**
 * Forwarded requests counted per token and month on the proxy's own thread, so `request_count`,
 * `last_used_at` and the account's monthly usage (which seeds quotas) never depend on request-log
 * records surviving a queue or a log worker. It holds one entry per token used since the last
 * `take`, however many requests there were.
 */
export class UsageTally {
  /** Entries by token id; more than one only across a month boundary. */
  #byToken = new Map<string, Entry[]>();

  get size(): number {
    return this.#byToken.size;
  }

  /** Counts a forwarded request of a known token; anything else is ignored. */
  add(record: RequestLogRecord): void {
    const { tokenId, accountId, timestamp } = record;
    if (!record.forwarded || tokenId === null || accountId === null) return;
    this.#count(tokenId, accountId, timestamp, 1);
  }

  /** Adds entries back (a hand-over the log worker did not confirm). */
  merge(usage: readonly TokenUsage[]): void {
    for (const u of usage) this.#count(u.tokenId, u.accountId, u.lastUsedAt, u.count);
  }

  /** Everything counted so far, one entry per token and month; the tally starts again empty. */
  take(): TokenUsage[] {
    const out: TokenUsage[] = [];
    for (const entries of this.#byToken.values())
      for (const { tokenId, accountId, count, lastUsedAt } of entries)
        out.push({ tokenId, accountId, count, lastUsedAt });
    this.#byToken = new Map();
    return out;
  }

  #count(tokenId: string, accountId: string, timestamp: string, count: number): void {
    let entries = this.#byToken.get(tokenId);
    if (entries === undefined) {
      entries = [];
      this.#byToken.set(tokenId, entries);
    }
    // The month of an ISO timestamp is its first 7 characters; comparing in place allocates nothing.
    for (const entry of entries) {
      if (entry.accountId === accountId && timestamp.startsWith(entry.month)) {
        entry.count += count;
        if (timestamp > entry.lastUsedAt) entry.lastUsedAt = timestamp;
        return;
      }
    }
    entries.push({ tokenId, accountId, month: timestamp.slice(0, 7), count, lastUsedAt: timestamp });
  }
}
