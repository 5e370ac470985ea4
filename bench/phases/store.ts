import { ppp, roundP } from '../report.js';
import { difference } from '../stats.js';
import type { PhaseContext } from './context.js';
import { execFileSync } from 'node:child_process';

/** The `store` phase (see docs/performance.md). */
export async function storePhase(ctx: PhaseContext): Promise<void> {
  const { b, stamp, direct, proxy } = ctx;
  const pgReady = (() => {
    try {
      execFileSync('pg_isready', ['-q', '-h', '127.0.0.1', '-p', '5432'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  if (!pgReady) {
    b.notes.push(
      'PostgreSQL comparison skipped: no server accepting connections at 127.0.0.1:5432 (or pg_isready missing).',
    );
    b.results.store = { skipped: 'PostgreSQL not reachable at 127.0.0.1:5432' };
  } else {
    const dbName = `tokenproxy_bench_${stamp.replace(/-/g, '_').toLowerCase()}`;
    const psql = (sql: string): void => {
      execFileSync(
        'psql',
        ['-h', '127.0.0.1', '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-qc', sql],
        { stdio: 'ignore' },
      );
    };
    psql(`CREATE DATABASE ${dbName}`);
    // WITH (FORCE) ends the connections of a server still running (after a failure).
    b.cleanups.push(() => Promise.resolve(psql(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)));
    const pgServer = await b.startTokenproxy('postgres', `postgres://postgres@127.0.0.1:5432/${dbName}`);
    const pgToken = await b.createToken(pgServer, ['localhost']);
    const pg = b.proxied('proxy, PostgreSQL store', pgServer, pgToken.token);
    const r = await b.interleaved('store', [direct, proxy, pg], { rate: 1000, connections: 40 });
    await b.children.stop(pgServer.child);
    const d = r.get('direct');
    const sq = r.get('proxy');
    const p = r.get(pg.name);
    if (d === undefined || sq === undefined || p === undefined) throw new Error('missing result');
    b.results.store = {
      rate: 1000,
      direct: roundP(d.lat),
      added_sqlite: roundP(difference(d.lat, sq.lat)),
      added_postgres: roundP(difference(d.lat, p.lat)),
    };
    b.row(
      'added latency @1000/s: SQLite → PostgreSQL store',
      '',
      '',
      `${ppp(difference(d.lat, sq.lat))} → ${ppp(difference(d.lat, p.lat))}`,
      'ms',
    );
  }
}
