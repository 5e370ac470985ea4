import { fmt, ppp, roundP } from '../report.js';
import { difference, round } from '../stats.js';
import { openLoopConnections } from '../settings.js';
import type { PhaseContext } from './context.js';

/** The `latency` phase (see docs/performance.md). */
export async function latencyPhase(ctx: PhaseContext): Promise<void> {
  const { s, b, direct, proxy, proxyH2, forwarder } = ctx;
  const out: Record<string, unknown> = {};
  for (const rate of s.rates) {
    const connections = openLoopConnections(rate);
    const r = await b.interleaved(`latency ${rate}/s`, [direct, proxy, proxyH2, forwarder], {
      rate,
      connections,
    });
    const d = r.get('direct');
    const p = r.get('proxy');
    const w = r.get('forwarder');
    const p2 = r.get(proxyH2.name);
    if (d === undefined || p === undefined || w === undefined || p2 === undefined)
      throw new Error('missing result');
    const added = difference(d.lat, p.lat);
    out[`${rate}`] = {
      connections,
      direct: roundP(d.lat),
      proxy: roundP(p.lat),
      added: roundP(added),
      achieved_rps: { direct: round(d.rps, 1), proxy: round(p.rps, 1) },
      cpu_us_per_request: {
        stand_in_direct: round(d.cpuUs, 0),
        proxy: round(p.cpuUs, 0),
        forwarder: round(w.cpuUs, 0),
      },
      forwarder: { latency: roundP(w.lat), added: roundP(difference(d.lat, w.lat)) },
      // The client leg in HTTP/2, the direct leg still HTTP/1.1 (the stand-in speaks only that).
      proxy_h2: {
        latency: roundP(p2.lat),
        added: roundP(difference(d.lat, p2.lat)),
        achieved_rps: round(p2.rps, 1),
        cpu_us_per_request: round(p2.cpuUs, 0),
      },
      proxy_gc: p.gc,
    };
    b.row(`latency @${rate} req/s open loop, p50/p90/p99`, ppp(d.lat), ppp(p.lat), ppp(added), 'ms');
    b.row(`  proxy over h2 @${rate} req/s`, '', ppp(p2.lat), ppp(difference(d.lat, p2.lat)), 'ms');
    b.row(`  reference forwarder @${rate} req/s`, '', ppp(w.lat), ppp(difference(d.lat, w.lat)), 'ms');
    b.row(
      `  CPU per request @${rate} req/s (stand-in / proxy / proxy h2 / forwarder)`,
      d.cpuUs,
      `${fmt(p.cpuUs)} / ${fmt(p2.cpuUs)} / ${fmt(w.cpuUs)}`,
      '',
      'µs',
    );
    if (p.gc !== undefined) {
      b.row(
        `  proxy scavenges per 1,000 requests @${rate} req/s, mean pause`,
        '',
        `${fmt(p.gc.scavenges_per_1000_requests ?? 0)}, ${fmt(p.gc.scavenge_mean_ms ?? 0)} ms`,
        '',
        '',
      );
    }
  }
  b.results.latency = out;
}
