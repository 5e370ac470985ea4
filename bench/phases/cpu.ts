import { fmt } from '../report.js';
import { median, pairedRatios, round } from '../stats.js';
import type { PhaseContext } from './context.js';

/**
 * The `cpu` phase: issue 17's cost target alone — tokenproxy's CPU per forwarded request against the
 * bare forwarder's, the two alternated over more rounds than the throughput phase gives them (the
 * spread between rounds of one system is wide on a shared guest). With `--profile`, the proxy's
 * profile then holds forwarded requests only.
 */
export async function cpuPhase(ctx: PhaseContext): Promise<void> {
  const { s, b, proxy, forwarder } = ctx;
  const connections = 32;
  const rounds = s.quick ? 1 : 7;
  // Fixed counts: runs sized from a short warm-up's rate (cold JIT) lasted ~1 s here, too short for a
  // CPU figure; 20,000 requests are 4-8 s on this machine, after 10,000 of warm-up per system.
  const requests = s.quick ? { warmup: 500, run: 2_000 } : { warmup: 10_000, run: 20_000 };
  const r = await b.interleaved(`cpu c=${connections}`, [proxy, forwarder], {
    connections,
    rounds,
    requests,
  });
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
}
