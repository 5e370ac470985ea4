import { fmt, ratioRange, roundP } from '../report.js';
import { pairedRatios, round } from '../stats.js';
import type { PhaseContext } from './context.js';

/** The `throughput` phase (see docs/performance.md). */
export async function throughputPhase(ctx: PhaseContext): Promise<void> {
  const { s, b, direct, proxy, proxyH2, forwarder, relay, tp, token } = ctx;
  const out: Record<string, unknown> = {};
  // One attacking IP: after its first refusals it is answered 429 ip_backoff (DESIGN §6), which is
  // the path a real flood takes, so both statuses count as refusals here.
  const refused = b.proxied('refused', tp, token, 'http://evil.example', [403, 429]);
  for (const connections of s.concurrencies) {
    const r = await b.interleaved(
      `throughput c=${connections}`,
      [direct, proxy, proxyH2, refused, forwarder, relay],
      {
        connections,
      },
    );
    const d = r.get('direct');
    const p = r.get('proxy');
    const f = r.get('refused');
    const w = r.get('forwarder');
    const x = r.get('relay');
    const p2 = r.get(proxyH2.name);
    if (
      d === undefined ||
      p === undefined ||
      f === undefined ||
      w === undefined ||
      x === undefined ||
      p2 === undefined
    )
      throw new Error('missing result');
    out[`${connections}`] = {
      direct_rps: round(d.rps, 1),
      proxy_rps: round(p.rps, 1),
      proxy_h2_rps: round(p2.rps, 1),
      proxy_h2_over_direct: round(p2.rps / d.rps, 3),
      proxy_h2_over_direct_by_round: pairedRatios(p2.rpsRounds, d.rpsRounds),
      refused_403_rps: round(f.rps, 1),
      forwarder_rps: round(w.rps, 1),
      relay_rps: round(x.rps, 1),
      proxy_over_direct: round(p.rps / d.rps, 3),
      forwarder_over_direct: round(w.rps / d.rps, 3),
      proxy_over_direct_by_round: pairedRatios(p.rpsRounds, d.rpsRounds),
      forwarder_over_direct_by_round: pairedRatios(w.rpsRounds, d.rpsRounds),
      relay_over_direct: round(x.rps / d.rps, 3),
      relay_over_direct_by_round: pairedRatios(x.rpsRounds, d.rpsRounds),
      refused_over_proxy: round(f.rps / p.rps, 3),
      cpu_us_per_request: {
        stand_in_direct: round(d.cpuUs, 0),
        proxy: round(p.cpuUs, 0),
        proxy_h2: round(p2.cpuUs, 0),
        proxy_refused: round(f.cpuUs, 0),
        forwarder: round(w.cpuUs, 0),
        relay: round(x.cpuUs, 0),
      },
      rounds: {
        direct: d.rpsRounds,
        proxy: p.rpsRounds,
        proxy_h2: p2.rpsRounds,
        refused: f.rpsRounds,
        forwarder: w.rpsRounds,
        relay: x.rpsRounds,
      },
      latency: {
        direct: roundP(d.lat),
        proxy: roundP(p.lat),
        proxy_h2: roundP(p2.lat),
        refused: roundP(f.lat),
        forwarder: roundP(w.lat),
        relay: roundP(x.lat),
      },
    };
    b.row(
      `throughput, closed loop, ${connections} connections`,
      d.rps,
      p.rps,
      `ratio ${fmt(p.rps / d.rps)} ${ratioRange(p.rpsRounds, d.rpsRounds)}`,
      'req/s',
    );
    b.row(
      `  proxy over h2, ${connections} conns`,
      '',
      `${fmt(p2.rps)} (${fmt(p2.cpuUs)} µs CPU/req)`,
      `ratio ${fmt(p2.rps / d.rps)} ${ratioRange(p2.rpsRounds, d.rpsRounds)}`,
      'req/s',
    );
    b.row(
      `  reference forwarder, ${connections} conns`,
      '',
      `${fmt(w.rps)} (${fmt(w.cpuUs)} µs CPU/req)`,
      `ratio ${fmt(w.rps / d.rps)} ${ratioRange(w.rpsRounds, d.rpsRounds)}`,
      'req/s',
    );
    b.row(
      `  raw TLS relay (floor, no HTTP), ${connections} conns`,
      '',
      `${fmt(x.rps)} (${fmt(x.cpuUs)} µs CPU/req)`,
      `ratio ${fmt(x.rps / d.rps)} ${ratioRange(x.rpsRounds, d.rpsRounds)}`,
      'req/s',
    );
    b.row(
      `  refusal path (403/429, wrong Origin), ${connections} conns`,
      '',
      f.rps,
      `${fmt(f.rps / p.rps)}× forwarded`,
      'req/s',
    );
    b.row(
      `  CPU per request, ${connections} conns (stand-in / proxy fwd / proxy 403)`,
      d.cpuUs,
      `${fmt(p.cpuUs)} / ${fmt(f.cpuUs)}`,
      '',
      'µs',
    );
  }
  b.results.throughput = out;
}
