/** Command-line settings of `npm run bench` and the phases it can run. */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const PHASES = [
  'latency',
  'throughput',
  'cpu',
  'streaming',
  'memory',
  'origins',
  'store',
  'tokens',
  'steady',
] as const;
export type Phase = (typeof PHASES)[number];

export interface Settings {
  readonly quick: boolean;
  readonly profile: boolean;
  /** Linux perf's CPU-time samples over the `cpu` phase, by kind of work (bench/perf-record.ts). */
  readonly perf: boolean;
  readonly keep: boolean;
  readonly only: ReadonlySet<Phase>;
  /** Measured seconds per h2load run, plus the leading seconds left out (connection setup). */
  readonly durationS: number;
  readonly warmS: number;
  /** Interleaved rounds: each round runs every scenario of a comparison once. */
  readonly rounds: number;
  readonly warmupS: number;
  readonly streamRounds: number;
  readonly streamsPerRound: number;
  readonly heldStreams: number;
  readonly bigTokenCount: number;
  /** The steady phase: closed-loop requests first, then seconds at each of `rates` (1,000 first). */
  readonly steadyPreloadRequests: number;
  readonly steadyS: number;
  /** Pin tokenproxy and the references to CPU 0, the rest to CPU 1 (default; `--no-pin`: let the OS place them). */
  readonly pin: boolean;
  readonly rates: readonly number[];
  readonly concurrencies: readonly number[];
}

export function parseArgs(argv: readonly string[]): Settings {
  const quick = argv.includes('--quick');
  const onlyAt = argv.indexOf('--only');
  const only = new Set<Phase>();
  if (onlyAt !== -1) {
    for (const name of (argv[onlyAt + 1] ?? '').split(',')) {
      if (!(PHASES as readonly string[]).includes(name)) throw new Error(`--only: unknown phase "${name}"`);
      only.add(name as Phase);
    }
  } else {
    for (const p of PHASES) only.add(p);
  }
  const perf = argv.includes('--perf');
  if (perf && !only.has('cpu'))
    throw new Error('--perf samples the cpu phase: add cpu to --only (e.g. --only cpu or --only steady,cpu)');
  return {
    quick,
    profile: argv.includes('--profile'),
    perf,
    keep: argv.includes('--keep'),
    only,
    durationS: quick ? 1 : 6,
    warmS: quick ? 0.3 : 1,
    rounds: quick ? 1 : 3,
    warmupS: quick ? 0.5 : 3,
    streamRounds: quick ? 1 : 6,
    streamsPerRound: 5,
    heldStreams: quick ? 200 : 1000,
    bigTokenCount: quick ? 2_000 : 100_000,
    steadyPreloadRequests: quick ? 4_000 : 80_000,
    steadyS: secondsArg(argv, '--steady-seconds') ?? (quick ? 3 : 60),
    pin: !argv.includes('--no-pin'),
    rates: [500, 1000],
    concurrencies: [32, 128],
  };
}

/** Open-loop load paces each connection at 25 req/s (40 connections at 1,000 req/s). */
export const OPEN_LOOP_RPS_PER_CONNECTION = 25;

export function openLoopConnections(rate: number): number {
  return Math.max(1, Math.round(rate / OPEN_LOOP_RPS_PER_CONNECTION));
}

/** `--name N`: N seconds (positive), or undefined when the option is absent. */
function secondsArg(argv: readonly string[], name: string): number | undefined {
  const at = argv.indexOf(name);
  if (at === -1) return undefined;
  const value = Number(argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name}: expected a positive number of seconds`);
  return value;
}
