import { ppp, roundP } from '../report.js';
import { difference } from '../stats.js';
import type { PhaseContext } from './context.js';

/** The `origins` phase (see docs/performance.md). */
export async function originsPhase(ctx: PhaseContext): Promise<void> {
  const { b, direct, proxy, tp, keyId, openedStore } = ctx;
  const st = await openedStore();
  const hosts = Array.from({ length: 997 }, (_, i) => `app${i}.customer${i % 37}.example`);
  hosts.push('*.wild.example', 'https://app.example.com:8443', 'localhost');
  const [token1000] = await b.insertTokens(st, tp.accountId, keyId, 1, hosts);
  const many = b.proxied('proxy, 1,000 origins', tp, token1000 as string);
  const r = await b.interleaved('origins', [direct, proxy, many], { rate: 1000, connections: 40 });
  const d = r.get('direct');
  const one = r.get('proxy');
  const thousand = r.get(many.name);
  if (d === undefined || one === undefined || thousand === undefined) throw new Error('missing result');
  b.results.origins = {
    rate: 1000,
    direct: roundP(d.lat),
    added_1_origin: roundP(difference(d.lat, one.lat)),
    added_1000_origins: roundP(difference(d.lat, thousand.lat)),
  };
  b.row(
    'added latency @1000/s: 1 origin → 1,000 origins',
    '',
    '',
    `${ppp(difference(d.lat, one.lat))} → ${ppp(difference(d.lat, thousand.lat))}`,
    'ms',
  );
}
