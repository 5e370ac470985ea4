import { ppp, roundP } from '../report.js';
import { difference, round } from '../stats.js';
import { log } from '../util.js';
import type { PhaseContext } from './context.js';

/** The `tokens` phase (see docs/performance.md). */
export async function tokensPhase(ctx: PhaseContext): Promise<void> {
  const { s, b, direct, proxy, tp, keyId, openedStore } = ctx;
  const st = await openedStore();
  const have = s.only.has('origins') ? 2 : 1;
  await b.insertTokens(st, tp.accountId, keyId, 10 - have);
  const small = await b.interleaved('tokens=10', [direct, proxy], { rate: 1000, connections: 40 });
  log(`tokens: inserting ${s.bigTokenCount - 10} tokens into the SQLite store`);
  const t0 = Date.now();
  await b.insertTokens(st, tp.accountId, keyId, s.bigTokenCount - 10);
  const insertS = (Date.now() - t0) / 1000;
  const big = await b.interleaved(`tokens=${s.bigTokenCount}`, [direct, proxy], {
    rate: 1000,
    connections: 40,
  });
  const ds = small.get('direct');
  const ps = small.get('proxy');
  const db = big.get('direct');
  const pb = big.get('proxy');
  if (ds === undefined || ps === undefined || db === undefined || pb === undefined)
    throw new Error('missing result');
  b.results.tokens = {
    rate: 1000,
    small: {
      tokens: 10,
      direct: roundP(ds.lat),
      added: roundP(difference(ds.lat, ps.lat)),
      proxy_cpu_us_per_request: round(ps.cpuUs, 0),
      proxy_gc: ps.gc,
    },
    big: {
      tokens: s.bigTokenCount,
      direct: roundP(db.lat),
      added: roundP(difference(db.lat, pb.lat)),
      proxy_cpu_us_per_request: round(pb.cpuUs, 0),
      proxy_gc: pb.gc,
    },
    insert_seconds: round(insertS, 1),
  };
  b.row(
    `added latency @1000/s: 10 → ${s.bigTokenCount.toLocaleString('en')} tokens`,
    '',
    '',
    `${ppp(difference(ds.lat, ps.lat))} → ${ppp(difference(db.lat, pb.lat))}`,
    'ms',
  );
}
