/** What the bench starts and measures: the proxy under test, reference servers, load scenarios. */
import type { Child } from '../procs.js';
import type { Percentiles } from '../stats.js';

export interface Tokenproxy {
  readonly child: Child;
  readonly apiUrl: string;
  readonly proxyUrl: string;
  readonly ca: string;
  readonly apiKey: string;
  readonly accountId: string;
}

/** A bench server that forwards to the stand-in (forwarder, relay), pinned to CPU 0 like tokenproxy. */
export interface Reference {
  readonly child: Child;
  readonly pid: number;
  readonly port: number;
  /** Its throughput and latency scenario: the proxied request, with a token it ignores. */
  readonly scenario: Scenario;
}

export interface Scenario {
  readonly name: string;
  /** Process whose CPU time is charged to this scenario (the proxy, or the stand-in when direct). */
  readonly cpuPid: number;
  readonly url: string;
  /** What the load generator speaks to `url` (default `h1`; `h2` only to tokenproxy, which offers it). */
  readonly protocol?: 'h1' | 'h2';
  readonly headers: readonly string[];
  readonly expectStatus: readonly number[];
  /** tokenproxy's /metrics, read around each run for its garbage collections. */
  readonly metrics?: { readonly url: string; readonly ca: string };
}

/** One scenario's result over the rounds of `interleaved`. */
export interface Interleaved {
  readonly lat: Percentiles;
  /** Median over rounds. */
  readonly rps: number;
  readonly rpsRounds: number[];
  readonly cpuUs: number;
  readonly cpuRounds: number[];
  /** tokenproxy's garbage collections over the measured runs (gc.ts); undefined for other systems. */
  readonly gc: Record<string, number> | undefined;
}
