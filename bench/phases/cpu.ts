import { join } from 'node:path';
import { perfTallies, startPerfRecord } from '../perf-record.js';
import { PERF_CATEGORIES, perRequest, type PerfTally } from '../perf-rules.js';
import { fmt } from '../report.js';
import { median, pairedRatios, round } from '../stats.js';
import type { PhaseContext } from './context.js';

/**
 * The `cpu` phase: issue 17's cost target alone — tokenproxy's CPU per forwarded request against the
 * bare forwarder's, the two alternated over more rounds than the throughput phase gives them (the
 * spread between rounds of one system is wide on a shared guest). With `--profile`, the proxy's
 * profile then holds forwarded requests only; with `--perf`, Linux perf samples both over the phase.
 */
export async function cpuPhase(ctx: PhaseContext): Promise<void> {
  const { s, b, proxy, forwarder } = ctx;
  const connections = 32;
  const rounds = s.quick ? 1 : 7;
  // Fixed counts: runs sized from a short warm-up's rate (cold JIT) lasted ~1 s here, too short for a
  // CPU figure; 20,000 requests are 4-8 s on this machine, after 10,000 of warm-up per system.
  const requests = s.quick ? { warmup: 500, run: 2_000 } : { warmup: 10_000, run: 20_000 };
  const perfFile = join(ctx.tmp, 'cpu-phase.perf.data');
  const pids = [proxy.cpuPid, forwarder.cpuPid];
  const recorder = s.perf ? await startPerfRecord(b.children, pids, perfFile) : undefined;
  let r;
  try {
    r = await b.interleaved(`cpu c=${connections}`, [proxy, forwarder], { connections, rounds, requests });
  } finally {
    if (recorder !== undefined) await b.children.stop(recorder, 10_000);
  }
  const p = r.get(proxy.name);
  const w = r.get(forwarder.name);
  if (p === undefined || w === undefined) throw new Error('missing result');
  const ratios = pairedRatios(p.cpuRounds, w.cpuRounds);
  const ratio = median(ratios);
  b.results.cpu = {
    connections,
    rounds,
    requests_per_run: requests.run,
    proxy_us_per_request: round(p.cpuUs, 1),
    forwarder_us_per_request: round(w.cpuUs, 1),
    proxy_over_forwarder: round(ratio, 3),
    proxy_over_forwarder_by_round: ratios,
    by_round: { proxy: p.cpuRounds.map((v) => round(v, 1)), forwarder: w.cpuRounds.map((v) => round(v, 1)) },
    rps: { proxy: round(p.rps, 1), forwarder: round(w.rps, 1) },
  };
  b.row(
    `CPU per forwarded request, ${connections} conns, ${rounds} rounds`,
    '',
    `${fmt(p.cpuUs)} (forwarder ${fmt(w.cpuUs)})`,
    `${fmt(ratio)}× the forwarder (rounds ${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))})`,
    'µs',
  );
  if (recorder !== undefined) {
    const tallies = await perfTallies(b.children, perfFile, pids);
    reportPerf(ctx, tallies.get(proxy.cpuPid), p.cpuUs, tallies.get(forwarder.cpuPid), w.cpuUs);
  }
}

/**
 * The CPU per request of each system split by kind of work, in the table and the JSON: each kind's
 * share of the process's samples (warm-ups included) times its measured µs per request.
 */
function reportPerf(
  ctx: PhaseContext,
  proxyTally: PerfTally | undefined,
  proxyUs: number,
  forwarderTally: PerfTally | undefined,
  forwarderUs: number,
): void {
  const { b } = ctx;
  if (proxyTally === undefined || forwarderTally === undefined) throw new Error('missing perf tally');
  const proxyBy = perRequest(proxyTally, proxyUs);
  const forwarderBy = perRequest(forwarderTally, forwarderUs);
  const byCategory: Record<string, { proxy: number; forwarder: number }> = {};
  for (const category of PERF_CATEGORIES) {
    const pu = proxyBy.get(category) ?? 0;
    const fu = forwarderBy.get(category) ?? 0;
    byCategory[category] = { proxy: round(pu, 1), forwarder: round(fu, 1) };
    b.row(`  perf: ${category}`, '', `${fmt(pu)} (forwarder ${fmt(fu)})`, `${fmt(pu - fu)} more`, 'µs');
  }
  const threads = (tally: PerfTally, us: number): string =>
    [...tally.byThread]
      .sort((x, y) => y[1] - x[1])
      .map(([name, n]) => `${name} ${fmt((n / tally.samples) * us)}`)
      .join(', ');
  b.row(
    '  perf: by thread',
    '',
    threads(proxyTally, proxyUs),
    `forwarder: ${threads(forwarderTally, forwarderUs)}`,
    'µs',
  );
  (b.results.cpu as Record<string, unknown>).perf = {
    samples: { proxy: proxyTally.samples, forwarder: forwarderTally.samples },
    us_per_request_by_category: byCategory,
    samples_by_thread: {
      proxy: Object.fromEntries(proxyTally.byThread),
      forwarder: Object.fromEntries(forwarderTally.byThread),
    },
  };
}
