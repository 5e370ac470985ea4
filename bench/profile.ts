/**
 * Reads a V8 `.cpuprofile` (from `node --cpu-prof`): top self-time frames, self time by component
 * (a dependency, a tokenproxy folder, Node's internals, V8), and folded stacks for flame graphs.
 * Used by `npm run bench -- --profile`, and on its own:
 * `node dist-bench/bench/profile.js <file.cpuprofile> [count] [--folded <out>]`.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CpuProfileNode {
  readonly id: number;
  readonly children?: readonly number[];
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

type CallFrame = CpuProfileNode['callFrame'];

/** `name file:line`, as the frame lists and the folded stacks print a frame. */
function frameName(cf: CallFrame): string {
  const name = cf.functionName === '' ? '(anonymous)' : cf.functionName;
  return cf.url === '' ? name : `${name} ${shortUrl(cf.url)}:${cf.lineNumber + 1}`;
}

function nodesById(profile: CpuProfile): Map<number, CpuProfileNode> {
  const byId = new Map<number, CpuProfileNode>();
  for (const n of profile.nodes) byId.set(n.id, n);
  return byId;
}

/** Busy (non-idle) self time summed per `keyOf(frame)`, largest first. */
function selfTimeBy(profile: CpuProfile, keyOf: (cf: CallFrame) => string): Frame[] {
  const byId = nodesById(profile);
  const self = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (node === undefined || node.callFrame.functionName === '(idle)') return;
    const dt = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
    const key = keyOf(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + dt);
    busy += dt;
  });
  return [...self]
    .sort((x, y) => y[1] - x[1])
    .map(([frame, ms]) => ({
      frame,
      self_ms: Math.round(ms),
      busy_pct: Math.round((1000 * ms) / Math.max(busy, 1e-9)) / 10,
    }));
}

export function topSelfFrames(profile: CpuProfile, count: number): Frame[] {
  return selfTimeBy(profile, frameName).slice(0, count);
}

/** What a frame's time is charged to: a package, a tokenproxy folder, Node's own JS, or V8/native. */
export function componentOf(frame: { readonly functionName: string; readonly url: string }): string {
  const { url } = frame;
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg !== null) return pkg[1] ?? url;
  const own = /\/(?:dist|src)\/([^/]+)\//.exec(url);
  if (own !== null) return `tokenproxy ${own[1] ?? ''}`;
  if (url.startsWith('node:')) return 'node (JS internals)';
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : 'native (C++, syscalls)';
  return url;
}

export function selfByComponent(profile: CpuProfile): Frame[] {
  return selfTimeBy(profile, componentOf);
}

/**
 * The profile as folded stacks (`root;caller;callee <µs>` per line), the input of flame-graph tools
 * such as flamegraph.pl, inferno or speedscope. Idle time is left out.
 */
export function foldedStacks(profile: CpuProfile): string {
  const byId = nodesById(profile);
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stackOf = new Map<number, string>();
  const stack = (id: number): string => {
    const known = stackOf.get(id);
    if (known !== undefined) return known;
    const cf = byId.get(id)?.callFrame;
    // `;` separates frames in the folded format.
    const name = cf === undefined ? '?' : frameName(cf).replace(/;/g, ',');
    const up = parent.get(id);
    const text =
      up === undefined || byId.get(up)?.callFrame.functionName === '(root)' ? name : `${stack(up)};${name}`;
    stackOf.set(id, text);
    return text;
  };
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    if (byId.get(id)?.callFrame.functionName === '(idle)') return;
    const dt = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
    const key = stack(id);
    totals.set(key, (totals.get(key) ?? 0) + dt);
  });
  return [...totals].map(([k, us]) => `${k} ${Math.max(1, Math.round(us))}`).join('\n') + '\n';
}

function shortUrl(url: string): string {
  const m = /\/(dist|src|node_modules)\/(.*)$/.exec(url);
  if (m !== null) return `${m[1] ?? ''}/${m[2] ?? ''}`;
  return url.replace(/^file:\/\//, '').replace(/^node:/, 'node:');
}

export function printProfileTop(
  frames: readonly Frame[],
  title = 'proxy CPU profile, top self-time frames',
): void {
  process.stdout.write(`\n${title} (share of busy time):\n`);
  for (const f of frames) {
    process.stdout.write(
      `  ${f.busy_pct.toFixed(1).padStart(5)}%  ${String(f.self_ms).padStart(7)} ms  ${f.frame}\n`,
    );
  }
}

/** What `readProfileDir` found: the main thread's top frames and components, and a summary per file. */
export interface ProfileDir {
  readonly main: string | undefined;
  readonly top: Frame[];
  readonly components: Frame[];
  readonly files: Record<string, unknown>;
}

/**
 * Reads every `.cpuprofile` of one process in `dir` (one per thread: CPU.<date>.<time>.<pid>.<thread
 * id>.<n>.cpuprofile, thread 0 the process's own) and writes each one's folded stacks beside it.
 * `serve` and the references restart themselves once at start (src/runtime/v8-tuning.ts), so the
 * main thread leaves two profiles under one pid: the serving one is the later, whose name sorts last.
 */
export function readProfileDir(dir: string): ProfileDir {
  const names = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort();
  const main = names.findLast((f) => /\.0\.\d+\.cpuprofile$/.test(f)) ?? names[0];
  const files: Record<string, unknown> = {};
  let top: Frame[] = [];
  let components: Frame[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
    writeFileSync(`${path}.folded`, foldedStacks(parsed));
    const byComponent = selfByComponent(parsed).slice(0, 20);
    files[name] = { folded: `${path}.folded`, by_component: byComponent };
    if (name === main) {
      top = topSelfFrames(parsed, 30);
      components = byComponent;
      files[name] = { ...(files[name] as object), top_self: top };
    }
  }
  return { main, top, components, files };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const foldedAt = args.indexOf('--folded');
  const foldedOut = foldedAt === -1 ? undefined : args[foldedAt + 1];
  const [file, count] = foldedAt === -1 ? args : args.slice(0, foldedAt).concat(args.slice(foldedAt + 2));
  if (file === undefined || (foldedAt !== -1 && foldedOut === undefined)) {
    process.stderr.write('usage: profile.js <file.cpuprofile> [count] [--folded <out.folded>]\n');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  printProfileTop(topSelfFrames(profile, Number(count ?? 30)), 'top self-time frames');
  printProfileTop(selfByComponent(profile).slice(0, 20), 'self time by component');
  if (foldedOut !== undefined) {
    writeFileSync(foldedOut, foldedStacks(profile));
    process.stdout.write(`\nfolded stacks (for a flame graph): ${foldedOut}\n`);
  }
}
