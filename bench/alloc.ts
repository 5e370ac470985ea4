/**
 * `npm run bench:alloc [-- requests]`: bytes allocated on tokenproxy's main thread per request, and
 * where. Every byte allocated brings the next scavenge closer, and scavenges are most of what the proxy
 * adds to its CPU and its tail (docs/performance.md); unlike CPU time on a shared guest, bytes per
 * request repeat from run to run, so a change's effect shows in one run. Uses V8's sampling heap
 * profiler through the inspector (`--inspect` on loopback), with the objects the collector already
 * freed included, so it runs apart from bench/run.ts, whose CPU figures it would spoil.
 *
 * Each sample is charged to the innermost tokenproxy function on its stack (bench/allocations.ts).
 * Forwarded over HTTP/1.1 and HTTP/2, and refused; then the bench's reference forwarder (the least a
 * Node forwarder allocates). `requests` per scenario, 20,000 unless given.
 *
 * Then the same scenarios at the steady phase's 1,000 req/s, counting only what no young-generation
 * collection freed: what was promoted, what V8 allocated in the old generation outright, and the
 * little still live at the end. That is what only a full collection frees, and each full collection's
 * pause grows with it (docs/performance.md, round seventeen). Charged to the allocating frame, whoever
 * owns it: "(V8 API)" is what Node's C++ made with no JavaScript on the stack.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { connectInspector, type Inspector } from './inspector.js';
import { Bench } from './load/bench.js';
import { ensureH2load } from './load/setup.js';
import type { Scenario } from './load/types.js';
import { tallyAllocations, type AllocationTally, type SamplingNode } from './allocations.js';
import { parseArgs, ROOT } from './settings.js';
import { log } from './util.js';

const INSPECTOR_PORT = 9240;
const FORWARDER_INSPECTOR_PORT = 9241;
/** One sample per this many bytes on average (V8's default is 32 KiB: too coarse per request). */
const SAMPLING_INTERVAL = 1024;
const TOP = 20;
const SURVIVOR_TOP = 8;
/** The steady phase's rate: what outlives the young generation depends on the pace, not the count. */
const STEADY_RATE = 1000;
/**
 * Unsampled seconds at that rate first. Switching scenarios deoptimizes code that V8 specialized for
 * the last one, and until it is optimized again every request's objects outlive the young
 * generation (docs/performance.md, rounds thirteen and fourteen): ~11 s after a switch.
 */
const SURVIVOR_WARM_S = 15;

/** One sampled load of `sc`: what was allocated, and how many requests it served. */
async function sampledLoad(
  b: Bench,
  inspector: Inspector,
  sc: Scenario,
  load: Parameters<Bench['load']>[1],
  withFreedByYoungGC: boolean,
): Promise<{ readonly tally: AllocationTally; readonly requests: number }> {
  await inspector.call('HeapProfiler.startSampling', {
    samplingInterval: SAMPLING_INTERVAL,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: withFreedByYoungGC,
  });
  const run = await b.load(sc, load);
  const stopped = (await inspector.call('HeapProfiler.stopSampling')) as { profile: { head: SamplingNode } };
  const tally = tallyAllocations(stopped.profile.head, `${pathToFileURL(join(ROOT, 'dist')).href}/`);
  return { tally, requests: run.total };
}

function perRequest(bytes: number, requests: number): string {
  return `${Math.round(bytes / requests)}`.padStart(6);
}

/** The `top` largest entries, in bytes per request. */
function writeTop(bytesBy: Map<string, number>, top: number, requests: number): void {
  for (const [name, bytes] of [...bytesBy].sort((x, y) => y[1] - x[1]).slice(0, top)) {
    process.stdout.write(`  ${perRequest(bytes, requests)} B  ${name}\n`);
  }
}

async function measure(b: Bench, inspector: Inspector, sc: Scenario, requests: number): Promise<void> {
  const load = { connections: 32, durationS: 5, warmS: 0, requests };
  const { tally, requests: served } = await sampledLoad(b, inspector, sc, load, true);
  process.stdout.write(
    `\n${sc.name}: ${served} requests; bytes allocated per request on its main thread: ` +
      `${perRequest(tally.total, served).trim()} in all, ` +
      `${perRequest(tally.tokenproxy, served).trim()} under a tokenproxy frame\n`,
  );
  writeTop(tally.sites, TOP, served);
}

async function measureSurvivors(
  b: Bench,
  inspector: Inspector,
  sc: Scenario,
  requests: number,
): Promise<void> {
  await b.load(sc, { rate: STEADY_RATE, connections: 32, durationS: SURVIVOR_WARM_S, warmS: 0 });
  const durationS = Math.max(5, Math.round(requests / STEADY_RATE));
  const load = { rate: STEADY_RATE, connections: 32, durationS, warmS: 0 };
  const { tally, requests: served } = await sampledLoad(b, inspector, sc, load, false);
  process.stdout.write(
    `\n${sc.name}: ${served} requests; ${perRequest(tally.total, served).trim()} B per request\n`,
  );
  writeTop(tally.leaves, SURVIVOR_TOP, served);
}

async function main(): Promise<void> {
  const requests = Number(process.argv[2] ?? 20_000);
  if (!Number.isInteger(requests) || requests < 1_000) {
    throw new Error(`requests must be a whole number of at least 1000, got "${process.argv[2]}"`);
  }
  process.env.BENCH_PROXY_NODE_ARGS = `--inspect=127.0.0.1:${INSPECTOR_PORT}`;
  const tmp = await mkdtemp(join(tmpdir(), 'tokenproxy-alloc-'));
  const b = new Bench(parseArgs([]), tmp);
  try {
    await ensureH2load(b.children);
    const tls = await b.startStandIn();
    // The least a Node forwarder allocates per request, for comparison (none of it is tokenproxy's).
    const forwarder = await b.startReference(
      'forwarder',
      'reference forwarder',
      'forwarder.js',
      tls.cert,
      tls.key,
      [`--inspect=127.0.0.1:${FORWARDER_INSPECTOR_PORT}`],
    );
    const tp = await b.startTokenproxy('sqlite', undefined);
    const { token } = await b.createToken(tp, ['localhost']);
    const scenarios: [Scenario, number][] = [
      [b.proxied('forwarded, HTTP/1.1', tp, token), INSPECTOR_PORT],
      [b.proxied('forwarded, HTTP/2', tp, token, 'http://localhost', [200], 'h2'), INSPECTOR_PORT],
      [b.proxied('refused', tp, token, 'http://evil.example', [403, 429]), INSPECTOR_PORT],
      [{ ...forwarder.scenario, name: 'reference forwarder, HTTP/1.1' }, FORWARDER_INSPECTOR_PORT],
    ];
    // Warm first: what runs once (module loading, compiling, first connections) is not per request.
    for (const [sc] of scenarios)
      await b.load(sc, { connections: 32, durationS: 2, warmS: 0, requests: 5_000 });
    const inspectors = new Map<number, Inspector>();
    for (const port of [INSPECTOR_PORT, FORWARDER_INSPECTOR_PORT]) {
      const inspector = await connectInspector(port);
      await inspector.call('HeapProfiler.enable');
      inspectors.set(port, inspector);
    }
    for (const [sc, port] of scenarios) await measure(b, inspectors.get(port) as Inspector, sc, requests);
    process.stdout.write(
      `\nAt ${STEADY_RATE} req/s, bytes per request that no young-generation collection freed ` +
        '(promoted, allocated old, or live at the end), by allocating frame:\n',
    );
    for (const [sc, port] of scenarios) {
      await measureSurvivors(b, inspectors.get(port) as Inspector, sc, requests);
    }
  } finally {
    await b.children.stopAll();
    await rm(tmp, { recursive: true, force: true });
    log('done');
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
