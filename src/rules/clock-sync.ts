/**
 * One clock for a cluster: the database's. Members on different machines each read their own wall
 * clock, and any skew between them moved rate-limit windows and let a member take an outbox or job
 * lease another still held (docs/cluster.md, "Clocks"). Each member instead reads the database
 * server's clock now and then and runs it forward on its own monotonic clock, so every member's
 * `now` is the database's to within half a round trip, and a step of a member's own wall clock
 * changes nothing.
 *
 * Pure: the I/O (the query, `performance.now()`) is src/store/shared-clock.ts's.
 */

/** One reading of the database's clock, bracketed by the reader's monotonic clock. */
export interface ClockSample {
  /** `performance.now()` just before the query was sent. */
  readonly sentMono: number;
  /** `performance.now()` once its answer arrived. */
  readonly receivedMono: number;
  /** The database's wall clock, in ms since the epoch, at some instant in between. */
  readonly serverMs: number;
}

/**
 * A reading whose round trip took longer than this (or than half again the shortest seen, on a
 * database that is simply far away) is not used: the database's instant could lie anywhere in it,
 * and half of it is the reading's possible error. A loaded database answers slower; the previous
 * anchor (run forward on the monotonic clock) is better than a vague new one, for a while.
 */
export const MAX_SAMPLE_RTT_MS = 100;

/**
 * After this long without a reading taken, the best of the next ones is taken whatever its round
 * trip: the monotonic clock drifts (tens of ppm) and stops while a machine is suspended, so an old
 * anchor grows worse than any reading.
 */
export const STALE_ANCHOR_MS = 5 * 60_000;

/** A reading that moves the clock by more than this against the last one is worth a log line. */
export const CLOCK_MOVED_WARN_MS = 1000;

/** A member whose own wall clock is this far from the database's is told so (it is not used). */
export const LOCAL_OFFSET_WARN_MS = 1000;

/** The sample with the shortest round trip among those that are readings at all. */
export function fastestSample(samples: readonly ClockSample[]): ClockSample | undefined {
  let best: ClockSample | undefined;
  for (const s of samples) {
    const rtt = s.receivedMono - s.sentMono;
    if (rtt < 0 || !Number.isFinite(s.serverMs)) continue;
    if (best === undefined || rtt < best.receivedMono - best.sentMono) best = s;
  }
  return best;
}

/**
 * The sample with the shortest round trip (the tightest bound on when the database read its
 * clock), or undefined when none is within `maxRttMs`.
 */
export function bestSample(
  samples: readonly ClockSample[],
  maxRttMs: number = MAX_SAMPLE_RTT_MS,
): ClockSample | undefined {
  const best = fastestSample(samples);
  return best !== undefined && best.receivedMono - best.sentMono <= maxRttMs ? best : undefined;
}

/**
 * The longest round trip a refresh takes, given the shortest seen so far and how long ago a reading
 * was last taken: MAX_SAMPLE_RTT_MS, or half again the shortest on a database always further away
 * (another region), and anything once the anchor is STALE_ANCHOR_MS old.
 */
export function acceptableRtt(shortestSeenMs: number, sinceTakenMs: number): number {
  if (sinceTakenMs >= STALE_ANCHOR_MS) return Number.POSITIVE_INFINITY;
  return Math.max(MAX_SAMPLE_RTT_MS, shortestSeenMs * 1.5);
}

/**
 * What to add to `performance.now()` to get the database's time: the database read its clock at
 * the middle of the round trip, as far as the reader can tell (error at most half of it).
 */
export function monoToServer(sample: ClockSample): number {
  return sample.serverMs - (sample.sentMono + sample.receivedMono) / 2;
}
