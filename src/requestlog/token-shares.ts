/**
 * One token's share of a shared log queue. The refused records of known tokens and the anomaly
 * entries are queues every tenant shares, and anyone holding any public token can fill them with
 * refusals (a disallowed Origin, every `ip_backoff` 429). Were the queue only bounded as a whole,
 * such a flood would evict every other tenant's older items; with a share per token, an item of a
 * token already holding its share is dropped on arrival instead, and the others' still get in.
 */

/** The part of a queue's byte budget (and of its record count) one token may hold. */
export const TOKEN_SHARE = 1 / 8;

/** Items and their estimated bytes (record-size.ts) of one token in a queue. */
export interface Share {
  count: number;
  bytes: number;
}

/** Per-token totals of items posted in one message (TokenShares.post), kept until it is stored. */
export type PostedShares = ReadonlyMap<string, Share>;

/**
 * Whether a token holding `count` items and `bytes` (waiting or posted, not yet stored) may add one
 * of `itemBytes` to a queue of `budget` bytes and `max` items. A token holding nothing always may,
 * so a share smaller than one item (tiny budgets) never shuts a token out; the queue's own trim
 * still bounds the whole.
 */
export function withinShare(
  count: number,
  bytes: number,
  itemBytes: number,
  budget: number,
  max: number,
): boolean {
  if (count === 0) return true;
  return bytes + itemBytes <= budget * TOKEN_SHARE && count + 1 <= max * TOKEN_SHARE;
}

/**
 * What each token holds in one queue: `held` (waiting or posted, not stored: what the share bounds)
 * and `waiting` (not yet posted). A posted message takes the waiting totals with it (post), so that
 * what it held is given back exactly when it is stored or lost, and queued again should its worker
 * die. Tokens holding nothing have no entry: the maps hold at most the tokens with items queued.
 * O(1) per item; O(tokens in the message) per message.
 */
export class TokenShares {
  readonly #held = new Map<string, Share>();
  #waiting = new Map<string, Share>();

  /** Whether `tokenId` may add an item of `bytes` (see withinShare). */
  admits(tokenId: string, bytes: number, budget: number, max: number): boolean {
    const held = this.#held.get(tokenId);
    return held === undefined || withinShare(held.count, held.bytes, bytes, budget, max);
  }

  /** An item of `tokenId` is waiting. */
  add(tokenId: string, bytes: number): void {
    add(this.#held, tokenId, 1, bytes);
    add(this.#waiting, tokenId, 1, bytes);
  }

  /** A waiting item was dropped (trimmed). */
  trimmed(tokenId: string, bytes: number): void {
    subtract(this.#held, tokenId, 1, bytes);
    subtract(this.#waiting, tokenId, 1, bytes);
  }

  /** Everything waiting was posted: its totals go with the message (undefined when none). */
  post(): PostedShares | undefined {
    if (this.#waiting.size === 0) return undefined;
    const posted = this.#waiting;
    this.#waiting = new Map();
    return posted;
  }

  /** A posted message was stored, or lost: what it held is given back. */
  forget(posted: PostedShares | undefined): void {
    if (posted === undefined) return;
    for (const [tokenId, share] of posted) subtract(this.#held, tokenId, share.count, share.bytes);
  }

  /** A forgotten message's items wait again (its worker died; they go to the next one). */
  requeue(posted: PostedShares | undefined): void {
    if (posted === undefined) return;
    for (const [tokenId, share] of posted) {
      add(this.#held, tokenId, share.count, share.bytes);
      add(this.#waiting, tokenId, share.count, share.bytes);
    }
  }

  clear(): void {
    this.#held.clear();
    this.#waiting.clear();
  }

  /** What `tokenId` holds, waiting or posted (for tests and checks). */
  held(tokenId: string): Share {
    const share = this.#held.get(tokenId);
    return { count: share?.count ?? 0, bytes: share?.bytes ?? 0 };
  }

  /** Tokens holding anything. */
  get tokens(): number {
    return this.#held.size;
  }
}

function add(map: Map<string, Share>, tokenId: string, count: number, bytes: number): void {
  const share = map.get(tokenId);
  if (share === undefined) map.set(tokenId, { count, bytes });
  else {
    share.count += count;
    share.bytes += bytes;
  }
}

function subtract(map: Map<string, Share>, tokenId: string, count: number, bytes: number): void {
  const share = map.get(tokenId);
  if (share === undefined) return;
  share.count -= count;
  share.bytes -= bytes;
  // Counts and bytes are sums of the same items' integers: both reach zero together.
  if (share.count <= 0) map.delete(tokenId);
}
