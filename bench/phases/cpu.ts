import { join } from 'node:path';
import type { Bench } from '../load/bench.js';
import { perfTallies, PERF_NEEDS, withPerfRecord } from '../perf-record.js';
import {
  emptyTally,
  PERF_CATEGORIES,
  perRequest,
  perThread,
  tallyProblem,
  type PerfTally,
} from '../perf-rules.js';
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
  const measure = (): ReturnType<Bench['interleaved']> =>
    b.interleaved(`cpu c=${connections}`, [proxy, forwarder], { connections, rounds, requests });
  const r = s.perf ? await withPerfRecord(b.children, pids, perfFile, measure) : await measure();
  const p = r.get(proxy.name);
  const w = r.get(forwarder.name);
  if (p === undefined || w === undefined) throw new Error('missing result');
  const ratios = pairedRatios(p.cpuRounds, w.cpuRounds);
  const ratio = median(ratios);
  const result: Record<string, unknown> = {
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
  b.results.cpu = result;
  b.row(
    `CPU per forwarded request, ${connections} conns, ${rounds} rounds`,
    '',
    `${fmt(p.cpuUs)} (forwarder ${fmt(w.cpuUs)})`,
    `${fmt(ratio)}× the forwarder (rounds ${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))})`,
    'µs',
  );
  if (s.perf) {
    const { tallies, unparsed } = await perfTallies(b.children, perfFile, pids);
    const proxyTally = tallies.get(proxy.cpuPid) ?? emptyTally();
    const forwarderTally = tallies.get(forwarder.cpuPid) ?? emptyTally();
    for (const [name, tally] of [
      ['proxy', proxyTally],
      ['forwarder', forwarderTally],
    ] as const) {
      const problem = tallyProblem(name, tally);
      if (problem !== undefined) {
        throw new Error(
          `--perf: ${problem} (${unparsed} lines of perf script not understood)\n${PERF_NEEDS}`,
        );
      }
    }
    const perf = reportPerf(b, proxyTally, p.cpuUs, forwarderTally, w.cpuUs);
    result.perf = { ...perf, unparsed_lines: unparsed };
  }
}

/**
 * The CPU per request of each system split by kind of work and by thread, as table rows; returns the
 * same for the JSON. Each kind's share of the process's samples (warm-ups included) times its
 * measured µs per request.
 */
function reportPerf(
  b: Bench,
  proxyTally: PerfTally,
  proxyUs: number,
  forwarderTally: PerfTally,
  forwarderUs: number,
): Record<string, unknown> {
  const proxyBy = perRequest(proxyTally, proxyUs);
  const forwarderBy = perRequest(forwarderTally, forwarderUs);
  const byCategory: Record<string, { proxy: number; forwarder: number }> = {};
  for (const category of PERF_CATEGORIES) {
    const pu = proxyBy.get(category) ?? 0;
    const fu = forwarderBy.get(category) ?? 0;
    byCategory[category] = { proxy: round(pu, 1), forwarder: round(fu, 1) };
    b.row(`  perf: ${category}`, '', `${fmt(pu)} (forwarder ${fmt(fu)})`, `${fmt(pu - fu)} more`, 'µs');
  }
  const proxyThreads = perThread(proxyTally, proxyUs);
  const forwarderThreads = perThread(forwarderTally, forwarderUs);
  const text = (byThread: Map<string, number>): string =>
    [...byThread].map(([name, us]) => `${name} ${fmt(us)}`).join(', ');
  b.row('  perf: by thread', '', text(proxyThreads), `forwarder: ${text(forwarderThreads)}`, 'µs');
  const rounded = (byThread: Map<string, number>): Record<string, number> =>
    Object.fromEntries([...byThread].map(([name, us]) => [name, round(us, 1)]));
  return {
    samples: { proxy: proxyTally.samples, forwarder: forwarderTally.samples },
    us_per_request_by_category: byCategory,
    us_per_request_by_thread: { proxy: rounded(proxyThreads), forwarder: rounded(forwarderThreads) },
  };
}
