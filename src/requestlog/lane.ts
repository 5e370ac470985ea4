import type { LogQueue, PackedValue } from './log-protocol.js';
import { REQUEST_WIDTH } from './log-protocol.js';
import { packedRecordBytes } from './record-size.js';
import type { TokenShares } from './token-shares.js';

/** Where a packed record's token id is (packRequest's order). */
const TOKEN_ID_AT = 3;

/**
 * Packed request records of one queue waiting to be posted (handover.ts), and the totals posted
 * and not yet stored. A lane shared by tokens that anyone may flood keeps `shares`: what each token
 * holds, so trimming gives back exactly what the trimmed records held.
 */
export class Lane {
  readonly queue: LogQueue;
  /** Bytes (estimated) of records waiting or posted, not yet stored. */
  readonly budget: number;
  readonly shares: TokenShares | null;
  values: PackedValue[] = [];
  bytes = 0;
  countPosted = 0;
  bytesPosted = 0;

  constructor(queue: LogQueue, budget: number, shares: TokenShares | null = null) {
    this.queue = queue;
    this.budget = budget;
    this.shares = shares;
  }

  get count(): number {
    return this.values.length / REQUEST_WIDTH;
  }

  /** Records not yet stored, here or in the worker. */
  get depth(): number {
    return this.count + this.countPosted;
  }

  /** Bytes of the last record packed into `values` (measured as trim measures what it drops). */
  lastBytes(): number {
    return packedRecordBytes(this.values, this.values.length - REQUEST_WIDTH, REQUEST_WIDTH);
  }

  /** Takes back the last record packed (refused on arrival): nothing was counted for it yet. */
  unpackLast(): void {
    this.values.length -= REQUEST_WIDTH;
  }

  post(): void {
    this.countPosted += this.count;
    this.bytesPosted += this.bytes;
    this.values = [];
    this.bytes = 0;
  }

  stored(count: number, bytes: number): void {
    this.countPosted -= count;
    this.bytesPosted -= bytes;
  }

  prepend(values: PackedValue[], bytes: number): void {
    if (values.length === 0) return;
    this.values = values.concat(this.values);
    this.bytes += bytes;
  }

  clear(): void {
    this.values = [];
    this.bytes = 0;
    this.countPosted = 0;
    this.bytesPosted = 0;
  }

  /** Drops the oldest waiting records (see trimTarget); returns how many. */
  trim(max: number): number {
    const shares = this.shares;
    const { count, bytes } = trimTarget(
      this.count,
      this.bytes,
      this.countPosted,
      this.bytesPosted,
      this.budget,
      max,
      (i) => {
        const size = packedRecordBytes(this.values, i * REQUEST_WIDTH, REQUEST_WIDTH);
        shares?.trimmed(this.values[i * REQUEST_WIDTH + TOKEN_ID_AT] as string, size);
        return size;
      },
    );
    this.values.splice(0, count * REQUEST_WIDTH);
    this.bytes -= bytes;
    return count;
  }
}

/**
 * How many of the oldest waiting items to drop, and their bytes, for a queue over its budget: down
 * to nine tenths of it, so a queue kept full by a flood pays for a trim once per tenth of its
 * budget, not on every write. Items already posted cannot be taken back; when they alone exceed the
 * budget, everything waiting goes. `sizeAt` is called once for each item dropped, oldest first, and
 * for no other: a caller gives back what each dropped item held there.
 */
export function trimTarget(
  count: number,
  bytes: number,
  countPosted: number,
  bytesPosted: number,
  budget: number,
  max: number,
  sizeAt: (index: number) => number,
): { count: number; bytes: number } {
  const byteTarget = budget * 0.9;
  const countTarget = Math.floor(max * 0.9);
  let dropped = 0;
  let droppedBytes = 0;
  while (
    dropped < count &&
    (bytes - droppedBytes + bytesPosted > byteTarget || count - dropped + countPosted > countTarget)
  ) {
    droppedBytes += sizeAt(dropped);
    dropped += 1;
  }
  return { count: dropped, bytes: droppedBytes };
}
