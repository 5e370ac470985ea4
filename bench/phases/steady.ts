import { gcSummary } from '../gc.js';
import { fmt } from '../report.js';
import type { Scenario } from '../load/types.js';
import { percentile, round, summarize } from '../stats.js';
import { openLoopConnections } from '../settings.js';
import { log } from '../util.js';
import type { PhaseContext } from './context.js';

/** Issue 17's figure for a stall: a single request this much slower than direct's median. */
const STALL_MS = 10;

interface Tail {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  /** Ascending latencies, ms. */
  readonly sorted: readonly number[];
}

function tailText(t: Tail): string {
  return `${fmt(t.p50)} / ${fmt(t.p99)} / ${fmt(t.p999)} / ${fmt(t.max)}`;
}

/** `t` − `direct`, percentile by percentile. */
function added(t: Tail, direct: Tail): Record<string, number> {
  return {
    p50: round(t.p50 - direct.p50, 4),
    p99: round(t.p99 - direct.p99, 4),
    p99_9: round(t.p999 - direct.p999, 4),
    max: round(t.max - direct.max, 4),
  };
}

function rounded(t: Tail): Record<string, number> {
  return {
    p50: round(t.p50, 4),
    p90: round(t.p90, 4),
    p99: round(t.p99, 4),
    p99_9: round(t.p999, 4),
    max: round(t.max, 4),
  };
}

/**
 * The `steady` phase: the condition of issue 17 — a large closed-loop load first (request-log table
 * grown, pools and heap aged), then a long fixed-rate run at each of the rates (1,000 req/s,
 * then 500), reporting the tail (p99.9, max), not only the usual percentiles. The proxy runs them over
 * HTTP/1.1, then over HTTP/2; direct, the reference forwarder and the raw TLS relay run the same rates
 * after it, for the added figures, the CPU comparison and the machine's own floor.
 */
export async function steadyPhase(ctx: PhaseContext): Promise<void> {
  const { s, b, direct, proxy, proxyH2, forwarder, relay } = ctx;
  const perConcurrency = Math.round(s.steadyPreloadRequests / s.concurrencies.length);
  for (const connections of s.concurrencies) {
    const res = await b.load(proxy, {
      connections,
      requests: perConcurrency,
      // Sizes h2load's time limit only: a closed-loop run ends when its requests are done.
      durationS: Math.max(10, perConcurrency / 500),
      warmS: 0,
    });
    log(`steady: closed-loop preload c=${connections}: ${res.total} requests, ${res.rps.toFixed(0)} req/s`);
  }
  const preload = perConcurrency * s.concurrencies.length;
  const out: Record<string, unknown> = { seconds: s.steadyS, preload_requests: preload };
  // The rate of the stalls first, right after the preload as in every earlier run. Each
  // system runs its rates back to back: a proxy left idle for a minute meanwhile would run its idle
  // memory reduction (src/runtime/idle-memory.ts) and start the next rate cold, not in steady state.
  const rates = [...s.rates].sort((a, c) => c - a);
  const perRate = new Map<number, RateRuns>(
    rates.map((rate) => [rate, { tails: new Map(), out: { rate, connections: openLoopConnections(rate) } }]),
  );
  // Each system has CPU 0 to itself: the others sharing it are paused meanwhile. Left running, the
  // proxy, idle after its runs, did its memory reduction a minute later, and V8 followed it with
  // collections for ~25 s, inside a reference's run when runs are shorter than the default.
  const onCpu0 = [proxy, forwarder, relay].map((sc) => sc.cpuPid);
  // The proxy over HTTP/2 (browsers' protocol) right after its HTTP/1.1 runs, in the same process.
  for (const sc of [proxy, proxyH2, direct, forwarder, relay]) {
    const others = onCpu0.filter((pid) => pid !== sc.cpuPid);
    await b.children.pausedWhile(others, () => measureRates(ctx, sc, perRate));
  }
  for (const [rate, runs] of perRate) out[`${rate}`] = reportRate(ctx, rate, preload, runs);
  b.results.steady = out;
}

/** `sc` at each of the phase's rates, back to back, into `perRate`. */
async function measureRates(ctx: PhaseContext, sc: Scenario, perRate: Map<number, RateRuns>): Promise<void> {
  const { s, b } = ctx;
  for (const [rate, runs] of perRate) {
    const res = await b.load(sc, {
      rate,
      connections: openLoopConnections(rate),
      durationS: s.steadyS,
      warmS: s.warmS,
    });
    const lat = summarize(res.latenciesMs);
    const sorted = Array.from(Float64Array.from(res.latenciesMs).sort());
    const tail = {
      p50: lat.p50,
      p90: lat.p90,
      p99: lat.p99,
      p999: percentile(sorted, 99.9),
      max: lat.max,
      sorted,
    };
    runs.tails.set(sc, tail);
    runs.out[sc.name] = {
      latency: rounded(tail),
      requests: lat.count,
      achieved_rps: round(res.rps, 1),
      cpu_us_per_request: round(res.cpuUsPerRequest, 0),
      // Only tokenproxy serves /metrics: the others read as no collections.
      gc: sc.metrics === undefined ? undefined : gcSummary(res.gc, res.total),
    };
    log(
      `steady ${sc.name} @${rate}: ${lat.count} requests, p99.9 ${fmt(tail.p999)} ms, max ${fmt(lat.max)} ms`,
    );
  }
}

/** One rate's runs: each system's tail, and the JSON the phase reports for the rate. */
interface RateRuns {
  readonly tails: Map<Scenario, Tail>;
  readonly out: Record<string, unknown>;
}

/** One rate's rows and JSON: the added figures against direct, and each system's stall count. */
function reportRate(
  ctx: PhaseContext,
  rate: number,
  preload: number,
  runs: RateRuns,
): Record<string, unknown> {
  const { s, b, direct, proxy, proxyH2, forwarder, relay } = ctx;
  const { tails, out } = runs;
  const d = tails.get(direct);
  const p = tails.get(proxy);
  const h2 = tails.get(proxyH2);
  const w = tails.get(forwarder);
  const r = tails.get(relay);
  if (d === undefined || p === undefined || h2 === undefined || w === undefined || r === undefined)
    throw new Error('missing result');
  const stalls = overDirect(p, d);
  out.proxy_requests_over_direct_p50_plus_10ms = stalls;
  out.proxy_h2_requests_over_direct_p50_plus_10ms = overDirect(h2, d);
  // The same count for the references: what the target's "no request over +10 ms" meets on this
  // machine before any tokenproxy code runs (the relay does nothing a proxy could skip).
  out.forwarder_requests_over_direct_p50_plus_10ms = overDirect(w, d);
  out.relay_requests_over_direct_p50_plus_10ms = overDirect(r, d);
  out.added = added(p, d);
  out.proxy_h2_added = added(h2, d);
  out.forwarder_added = added(w, d);
  out.relay_added = added(r, d);
  b.row(
    `steady ${s.steadyS} s @${rate} req/s after ${preload.toLocaleString('en')} closed-loop, p50/p99/p99.9/max`,
    tailText(d),
    tailText(p),
    `${stalls} over direct p50 + ${STALL_MS} ms`,
    'ms',
  );
  b.row(`  added over direct @${rate} req/s, p50/p99/p99.9`, '', addedText(p, d), '', 'ms');
  // Each system beside the proxy: its tail, its added figures and its stall count, on one row.
  const beside = (label: string, t: Tail): void =>
    b.row(
      `  ${label}, same rate`,
      '',
      tailText(t),
      `${addedText(t, d)}; ${overDirect(t, d)} over +${STALL_MS} ms`,
      'ms',
    );
  beside('proxy over h2', h2);
  beside('reference forwarder', w);
  // The floor: no HTTP, no allocation per request worth a collection; what crossing CPUs costs here.
  beside('raw TLS relay', r);
  for (const sc of [proxy, proxyH2]) {
    const gc = (out[sc.name] as { gc?: Record<string, number> }).gc;
    if (gc === undefined) continue;
    b.row(
      `  ${sc.name}: GC pauses over 10 ms; longest event-loop delay`,
      '',
      `${gc.pauses_over_10ms}; ${fmt(gc.event_loop_delay_max_ms as number)} ms`,
      `scavenge ${fmt(gc.scavenge_mean_ms as number)} ms mean, ${fmt(gc.scavenges_per_1000_requests as number)} per 1,000 requests`,
      '',
    );
  }
  return out;
}

/** Requests of `t` more than STALL_MS over direct's median: issue 17's "no request over +10 ms". */
function overDirect(t: Tail, direct: Tail): number {
  return t.sorted.filter((v) => v > direct.p50 + STALL_MS).length;
}

function addedText(t: Tail, direct: Tail): string {
  return `${fmt(t.p50 - direct.p50)} / ${fmt(t.p99 - direct.p99)} / ${fmt(t.p999 - direct.p999)}`;
}
