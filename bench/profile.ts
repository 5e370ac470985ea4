/**
 * Top self-time frames of a V8 `.cpuprofile` (from `node --cpu-prof`). Used by `npm run bench --
 * --profile`, and on its own: `node dist-bench/bench/profile.js <file.cpuprofile> [count]`.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface CpuProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
  };
}

export interface CpuProfile {
  readonly nodes: readonly CpuProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface Frame {
  readonly frame: string;
  readonly self_ms: number;
  /** Share of the busy (non-idle) time, in percent. */
  readonly busy_pct: number;
}

export function topSelfFrames(profile: CpuProfile, count: number): Frame[] {
  const byId = new Map<number, CpuProfileNode>();
  for (const n of profile.nodes) byId.set(n.id, n);
  const self = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (node === undefined) return;
    const dt = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
    const cf = node.callFrame;
    const name = cf.functionName === '' ? '(anonymous)' : cf.functionName;
    const where = cf.url === '' ? '' : ` ${shortUrl(cf.url)}:${cf.lineNumber + 1}`;
    const key = `${name}${where}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    if (cf.functionName !== '(idle)') busy += dt;
  });
  return [...self]
    .filter(([k]) => k !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([frame, ms]) => ({
      frame,
      self_ms: Math.round(ms),
      busy_pct: Math.round((1000 * ms) / Math.max(busy, 1e-9)) / 10,
    }));
}

function shortUrl(url: string): string {
  const m = /\/(dist|src|node_modules)\/(.*)$/.exec(url);
  if (m !== null) return `${m[1] ?? ''}/${m[2] ?? ''}`;
  return url.replace(/^file:\/\//, '').replace(/^node:/, 'node:');
}

export function printProfileTop(frames: readonly Frame[]): void {
  process.stdout.write('\nproxy CPU profile, top self-time frames (share of busy time):\n');
  for (const f of frames) {
    process.stdout.write(
      `  ${f.busy_pct.toFixed(1).padStart(5)}%  ${String(f.self_ms).padStart(7)} ms  ${f.frame}\n`,
    );
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, count] = process.argv.slice(2);
  if (file === undefined) {
    process.stderr.write('usage: profile.js <file.cpuprofile> [count]\n');
    process.exit(2);
  }
  printProfileTop(topSelfFrames(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, Number(count ?? 30)));
}
