import { readFile, rm } from 'node:fs/promises';
import type { Children } from './procs.js';

/**
 * One h2load run against one URL over TLS with keep-alive: HTTP/1.1 without pipelining, or HTTP/2 with
 * one stream in flight per connection (`-m 1`), so a connection carries the same load either way.
 */
export interface H2loadRun {
  readonly url: string;
  /** Default `h1`. */
  readonly protocol?: 'h1' | 'h2' | undefined;
  readonly headers: readonly string[];
  /** File with the POST body; GET when undefined. */
  readonly bodyFile?: string | undefined;
  readonly connections: number;
  /** Total offered rate (open loop, paced by h2load --rps); undefined = closed loop. */
  readonly rate?: number | undefined;
  /** Closed loop only: requests to send (h2load -n; its -D mode can hang while clients connect). */
  readonly requests?: number | undefined;
  readonly durationS: number;
  /** Requests started in the first `warmS` seconds are left out of the numbers (connection setup). */
  readonly warmS: number;
  readonly logFile: string;
  /** Every counted response must have one of these statuses, else the run fails. */
  readonly expectStatus: readonly number[];
}

export interface H2loadResult {
  /** Latency of each counted request in ms (request sent → end of response). */
  readonly latenciesMs: number[];
  /** Completed requests per second over the counted window. */
  readonly rps: number;
  readonly counted: number;
  readonly total: number;
}

export class BenchFailure extends Error {}

export async function h2load(children: Children, run: H2loadRun): Promise<H2loadResult> {
  const args = [
    ...(run.protocol === 'h2' ? [] : ['--h1']),
    '-t',
    '1',
    '-c',
    String(run.connections),
    '-m',
    '1',
  ];
  if (run.rate !== undefined) {
    // Open loop: each connection sends rate/connections req/s on its own timer. The connections are
    // started 1/rate s apart (-r 1 --rate-period), so their timers are out of phase and the offered
    // load is an even stream of one request every 1/rate s — not bursts of `connections` requests.
    // (-r excludes -D, hence a request count.)
    const perConnection = Math.max(1, Math.round(run.rate / run.connections));
    const total = Math.round(run.rate * (run.durationS + run.warmS));
    args.push(
      '--rps',
      String(perConnection),
      '-r',
      '1',
      `--rate-period=${Math.max(1, Math.round(1000 / run.rate))}ms`,
    );
    args.push('-n', String(Math.max(total, run.connections)));
  } else {
    args.push('-n', String(Math.max(run.requests ?? 0, run.connections * 4)));
  }
  args.push('--log-file', run.logFile);
  for (const h of run.headers) args.push('-H', h);
  if (run.bodyFile !== undefined) args.push('-d', run.bodyFile);
  args.push(run.url);
  const { stdout, stderr, code } = await children.run(
    'h2load',
    'h2load',
    args,
    (run.durationS + run.warmS) * 1000 + 30_000,
  );
  const summary =
    /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(
      stdout,
    );
  if (code !== 0 || summary === null) {
    throw new BenchFailure(
      `h2load exited with ${code} for ${run.url}:\n${stdout.slice(-2000)}\n${stderr.slice(-2000)}`,
    );
  }
  const errored = Number(summary[6]);
  const timeouts = Number(summary[7]);
  if (errored > 0 || timeouts > 0) {
    throw new BenchFailure(
      `h2load: ${errored} errored and ${timeouts} timed-out requests against ${run.url}`,
    );
  }
  const text = await readFile(run.logFile, 'utf8');
  await rm(run.logFile, { force: true });
  const rows: { start: number; status: number; us: number }[] = [];
  let first = Infinity;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const [start, status, us] = line.split('\t');
    const row = { start: Number(start), status: Number(status), us: Number(us) };
    rows.push(row);
    if (row.start < first) first = row.start;
  }
  // The leading warmS seconds (connection setup) are left out, but never more than the first half of
  // the run: a closed-loop run is sized from its warm-up's rate, and when that estimate was far too
  // low (a few hundred warm-up requests in quick mode, cold JIT) the whole run can end inside the
  // warm window, leaving nothing to measure.
  let lastStart = first;
  for (const row of rows) if (row.start > lastStart) lastStart = row.start;
  const from = first + Math.min(run.warmS * 1e6, (lastStart - first) / 2);
  // The closing 5 % of a closed-loop run has clients that are already done: left out of the rate.
  const ends = rows.map((r) => r.start + r.us).sort((a, b) => a - b);
  const last =
    run.rate === undefined ? (ends[Math.floor(ends.length * 0.95)] ?? 0) : (ends[ends.length - 1] ?? 0);
  let counted = 0;
  let inWindow = 0;
  const latenciesMs: number[] = [];
  const bad = new Map<number, number>();
  for (const row of rows) {
    if (!run.expectStatus.includes(row.status)) bad.set(row.status, (bad.get(row.status) ?? 0) + 1);
    if (row.start < from) continue;
    counted++;
    latenciesMs.push(row.us / 1000);
    if (row.start + row.us <= last) inWindow++;
  }
  if (bad.size > 0) {
    const list = [...bad].map(([s, n]) => `${n}× ${s}`).join(', ');
    throw new BenchFailure(
      `unexpected statuses from ${run.url} (expected ${run.expectStatus.join(' or ')}): ${list}`,
    );
  }
  if (counted === 0) throw new BenchFailure(`h2load: no request completed against ${run.url}`);
  const windowS = (last - from) / 1e6;
  return { latenciesMs, rps: inWindow / windowS, counted, total: rows.length };
}
