import { Gauge, type Registry } from 'prom-client';
import {
  CLOCK_MOVED_WARN_MS,
  LOCAL_OFFSET_WARN_MS,
  acceptableRtt,
  bestSample,
  fastestSample,
  monoToServer,
  type ClockSample,
} from '../rules/clock-sync.js';
import type { Store } from '../store/store.js';

/**
 * The wall clock every part of a server reads (token expiry, rate-limit windows, leases, outbox
 * schedules, record timestamps). On PostgreSQL it is the database server's clock, run forward on
 * this process's monotonic clock between readings (src/rules/clock-sync.ts says why); on SQLite it
 * is this machine's, which every process on the data dir shares anyway.
 */
export interface SharedClock {
  /** Ms since the epoch, whole. Plain functions: handed around as `now` on their own. */
  readonly nowMs: () => number;
  readonly now: () => Date;
  /** This process's own wall clock minus the shared one, as of the last reading (0 on SQLite). */
  readonly localOffsetMs: () => number;
  /** Stops the readings (idempotent). */
  readonly close: () => void;
}

/** What the clock says when it notices something (a pino logger fits). */
export interface ClockLogger {
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

export interface SharedClockOptions {
  readonly store: Pick<Store, 'readClock'>;
  readonly logger?: ClockLogger | undefined;
  /** Where `tokenproxy_clock_offset_seconds` goes. */
  readonly registry?: Registry | undefined;
  /** Between readings (default 30 s); 0 reads once (a short-lived thread). */
  readonly refreshMs?: number | undefined;
  /** Injected in tests; `performance.now` and `Date.now` otherwise. */
  readonly monotonic?: (() => number) | undefined;
  readonly wall?: (() => number) | undefined;
}

export const CLOCK_REFRESH_MS = 30_000;
/** Readings per refresh: the one with the shortest round trip is kept. */
const SAMPLES = 3;

/** Reads the database's clock once and keeps it; resolves to this machine's clock on SQLite. */
export async function startSharedClock(options: SharedClockOptions): Promise<SharedClock> {
  const mono = options.monotonic ?? (() => performance.now());
  const wall = options.wall ?? Date.now;
  const { store, logger } = options;

  const sample = async (): Promise<ClockSample[] | undefined> => {
    const samples: ClockSample[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const sentMono = mono();
      const serverMs = await store.readClock();
      if (serverMs === undefined) return undefined;
      samples.push({ sentMono, receivedMono: mono(), serverMs });
    }
    return samples;
  };

  let base: number;
  /** The shortest round trip seen, and when (monotonic) a reading was last taken. */
  let shortest = Number.POSITIVE_INFINITY;
  let takenAt = Number.NEGATIVE_INFINITY;
  const take = (chosen: ClockSample): void => {
    base = monoToServer(chosen);
    shortest = Math.min(shortest, chosen.receivedMono - chosen.sentMono);
    takenAt = chosen.receivedMono;
  };
  try {
    const first = await sample();
    if (first === undefined) return localClock(wall, options.registry);
    // At start even a slow reading beats none: its error is still at most half its round trip.
    const chosen = fastestSample(first);
    if (chosen === undefined) throw new Error('no reading of the database clock');
    take(chosen);
  } catch (err) {
    // The store answered the migrations a moment ago: a start is not refused for this. This
    // machine's clock stands in until a refresh reads the database's.
    base = wall() - mono();
    logger?.warn(
      { err: err instanceof Error ? err.message : String(err) },
      "could not read the database's clock at start: this machine's clock is used until the next reading",
    );
  }
  const nowMs = (): number => Math.floor(base + mono());
  let offset = wall() - nowMs();
  let offsetWarned = false;
  const checkOffset = (): void => {
    offset = wall() - nowMs();
    const far = Math.abs(offset) >= LOCAL_OFFSET_WARN_MS;
    if (far && !offsetWarned) {
      logger?.warn(
        { offset_ms: Math.round(offset) },
        `this machine's clock is ${seconds(offset)} ${offset > 0 ? 'ahead of' : 'behind'} the database's: ` +
          "tokenproxy uses the database server's clock, so every member of a cluster agrees; run NTP on both to keep times right",
      );
    } else if (!far && offsetWarned) {
      logger?.info(
        { offset_ms: Math.round(offset) },
        "this machine's clock agrees with the database's again",
      );
    }
    offsetWarned = far;
  };
  checkOffset();
  registerGauge(options.registry, () => offset);

  const refreshMs = options.refreshMs ?? CLOCK_REFRESH_MS;
  let timer: NodeJS.Timeout | undefined;
  if (refreshMs > 0) {
    timer = setInterval(() => {
      void sample()
        .then((samples) => {
          if (samples === undefined) return;
          const fastest = fastestSample(samples);
          if (fastest !== undefined) shortest = Math.min(shortest, fastest.receivedMono - fastest.sentMono);
          const best = bestSample(samples, acceptableRtt(shortest, mono() - takenAt));
          // No reading fast enough (a loaded database): the last one, run forward, is better, for a while.
          if (best === undefined) return;
          const next = monoToServer(best);
          const moved = next - base;
          if (Math.abs(moved) >= CLOCK_MOVED_WARN_MS) {
            logger?.warn(
              { moved_ms: Math.round(moved) },
              `the database's clock moved ${seconds(moved)} ${moved > 0 ? 'forward' : 'back'} since its last reading ` +
                "(stepped, or this machine's monotonic clock drifted): tokenproxy follows it",
            );
          }
          take(best);
          checkOffset();
        })
        // An unreachable database is reported by the requests that need it; the clock runs on.
        .catch(() => undefined);
    }, refreshMs);
    timer.unref();
  }

  return {
    nowMs,
    now: () => new Date(nowMs()),
    localOffsetMs: () => offset,
    close: () => clearInterval(timer),
  };
}

/** A clock a test drives (StartOptions.now): what it says, nothing read from the database. */
export function injectedClock(now: () => Date): SharedClock {
  return { nowMs: () => now().getTime(), now, localOffsetMs: () => 0, close: () => undefined };
}

function localClock(wall: () => number, registry: Registry | undefined): SharedClock {
  registerGauge(registry, () => 0);
  return { nowMs: wall, now: () => new Date(wall()), localOffsetMs: () => 0, close: () => undefined };
}

function registerGauge(registry: Registry | undefined, offset: () => number): void {
  if (registry === undefined) return;
  new Gauge({
    name: 'tokenproxy_clock_offset_seconds',
    help: "This process's wall clock minus the clock tokenproxy uses (the database server's on PostgreSQL), as of the last reading.",
    registers: [registry],
    // Workers of one machine share its clock: their average is the machine's offset, not a sum.
    aggregator: 'average',
    collect() {
      this.set(offset() / 1000);
    },
  });
}

function seconds(ms: number): string {
  return `${(Math.abs(ms) / 1000).toFixed(1)} s`;
}
