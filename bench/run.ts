/**
 * `npm run bench [-- --quick] [-- --profile] [-- --perf] [-- --only latency,throughput,…] [-- --keep] [-- --no-pin]`
 *
 * Starts, on loopback only, a stand-in HTTPS provider (own process, CPU 1) and `bin/tokenproxy serve`
 * (CPU 0), then measures direct (load generator → stand-in) against proxied (load generator → proxy
 * → stand-in) runs, interleaved round by round so that machine drift hits both alike. The driver
 * and the load generator (h2load) run on CPU 1. See docs/performance.md.
 */
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { BenchFailure } from './h2load.js';
import { Bench } from './load/bench.js';
import { ensureH2load, pinAllThreads } from './load/setup.js';
import type { PhaseContext } from './phases/context.js';
import { printProfileTop, readProfileDir, type ProfileDir } from './profile.js';
import { printTable } from './report.js';
import { OPEN_LOOP_RPS_PER_CONNECTION, ROOT, parseArgs } from './settings.js';
import { round } from './stats.js';
import { log, rssMb } from './util.js';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { latencyPhase } from './phases/latency.js';
import { throughputPhase } from './phases/throughput.js';
import { cpuPhase } from './phases/cpu.js';
import { streamingPhase } from './phases/streaming.js';
import { memoryPhase } from './phases/memory.js';
import { originsPhase } from './phases/origins.js';
import { storePhase } from './phases/store.js';
import { tokensPhase } from './phases/tokens.js';
import { steadyPhase } from './phases/steady.js';

async function main(): Promise<number> {
  const s = parseArgs(process.argv.slice(2));
  const started = new Date();
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  const tmp = await mkdtemp(join(tmpdir(), 'tokenproxy-bench-'));
  const b = new Bench(s, tmp);

  let interrupted = false;
  const onSignal = (): void => {
    if (interrupted) return;
    interrupted = true;
    log('interrupted: stopping every child process');
    void cleanup().finally(() => process.exit(130));
  };
  const cleanup = async (): Promise<void> => {
    for (const fn of b.cleanups.reverse().splice(0)) {
      await fn().catch((err: unknown) => log(`cleanup: ${String(err)}`));
    }
    await b.children.stopAll();
    if (!s.keep) await rm(tmp, { recursive: true, force: true });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', () => b.children.killAllNow());

  try {
    const cores = cpus().length;
    let pinning = 'proxy on CPU 0; stand-in provider, load generator (h2load) and bench driver on CPU 1';
    if (s.pin) {
      if (cores < 2)
        throw new BenchFailure(`the bench pins to CPUs 0 and 1 but this machine has ${cores} CPU`);
      // The driver's own threads (and every child it starts without taskset) go to CPU 1.
      pinAllThreads(process.pid, 1);
      if (cores > 2) pinning += ` (${cores} CPUs present; the others stay unused)`;
    } else {
      pinning = `not pinned (--no-pin): the OS places every process on the ${cores} CPUs`;
    }
    const h2loadVersion = await ensureH2load(b.children);
    log(`${s.quick ? 'quick' : 'full'} run; ${pinning}; ${h2loadVersion}`);

    const tls = await b.startStandIn();
    if (s.profile) {
      b.profileDir = join(ROOT, 'bench/results', `profile-${stamp}`);
      await mkdir(b.profileDir, { recursive: true });
    }
    const forwarderRef = await b.startReference(
      'forwarder',
      'reference forwarder',
      'forwarder.js',
      tls.cert,
      tls.key,
    );
    const forwarder = forwarderRef.scenario;
    const relayRef = await b.startReference('relay', 'raw TLS relay', 'relay.js', tls.cert, tls.key);
    const relay = relayRef.scenario;
    const tp = await b.startTokenproxy('sqlite', undefined);
    const { token, keyId } = await b.createToken(tp, ['localhost']);
    const direct = b.direct();
    const proxy = b.proxied('proxy', tp, token);
    // The same request over HTTP/2 (ALPN h2, one stream in flight per connection).
    const proxyH2 = b.proxied('proxy h2', tp, token, 'http://localhost', [200], 'h2');
    const rssIdleStart = rssMb(tp.child.pid);

    b.results.meta = {
      date: started.toISOString(),
      mode: s.quick ? 'quick' : 'full',
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      cores,
      h2load: h2loadVersion,
      pinning,
      durations: {
        measured_s_per_run: s.durationS,
        left_out_s_per_run: s.warmS,
        warmup_s_per_scenario: s.warmupS,
        rounds: s.rounds,
      },
      request:
        'POST /v1/chat/completions, 98-byte JSON body; answer 619-byte JSON; HTTP/1.1 over TLS 1.3, keep-alive (proxy h2: HTTP/2 to the proxy)',
    };
    b.row('measurement', 'direct', 'proxy', 'added by proxy', 'unit');

    let store: Store | undefined;
    const openedStore = async (): Promise<Store> => {
      if (store === undefined) {
        const opened = await openStore({ database: undefined, dataDir: join(tmp, 'data-sqlite') });
        store = opened;
        b.cleanups.push(() => opened.close());
      }
      return store;
    };
    const ctx: PhaseContext = {
      s,
      b,
      tmp,
      stamp,
      tls,
      direct,
      proxy,
      proxyH2,
      forwarder,
      relay,
      forwarderRef,
      relayRef,
      tp,
      token,
      keyId,
      rssIdleStart,
      openedStore,
    };
    if (s.only.has('latency')) await latencyPhase(ctx);

    if (s.only.has('throughput')) await throughputPhase(ctx);

    if (s.only.has('cpu')) await cpuPhase(ctx);

    if (s.only.has('streaming')) await streamingPhase(ctx);

    if (s.only.has('memory')) await memoryPhase(ctx);

    if (s.only.has('origins')) await originsPhase(ctx);

    if (s.only.has('store')) await storePhase(ctx);

    if (s.only.has('tokens')) await tokensPhase(ctx);
    if (s.only.has('steady')) await steadyPhase(ctx);

    b.results.rss_mb_at_end = round(rssMb(tp.child.pid), 1);

    // Stop the proxy now, so that a --cpu-prof profile is written before it is read.
    await b.children.stop(tp.child, 15_000);
    let proxyProfile: ProfileDir | undefined;
    let forwarderProfile: ProfileDir | undefined;
    if (b.profileDir !== undefined) {
      proxyProfile = readProfileDir(b.profileDir);
      // The forwarder's, for comparison: what both spend alike is Node's, the rest tokenproxy's own.
      await b.children.stop(forwarderRef.child, 15_000);
      forwarderProfile = readProfileDir(join(b.profileDir, 'forwarder'));
      b.results.profile = {
        dir: b.profileDir,
        main_thread: proxyProfile.main,
        profiles: proxyProfile.files,
        forwarder: { main_thread: forwarderProfile.main, profiles: forwarderProfile.files },
      };
    }

    process.stdout.write(
      `\ntokenproxy bench, ${started.toISOString()} (${s.quick ? 'quick' : 'full'} mode)\n`,
    );
    process.stdout.write(`pinning: ${pinning}\n`);
    process.stdout.write(
      `load: h2load --h1 (TLS 1.3, keep-alive; the h2 rows: h2load h2, one stream per connection); open loop = paced by --rps, ${OPEN_LOOP_RPS_PER_CONNECTION} req/s per connection\n\n`,
    );
    printTable(b.table);
    for (const note of b.notes) process.stdout.write(`note: ${note}\n`);
    if (proxyProfile !== undefined) {
      printProfileTop(proxyProfile.top);
      printProfileTop(proxyProfile.components, 'proxy CPU profile, self time by component');
    }
    if (forwarderProfile !== undefined) {
      printProfileTop(forwarderProfile.components, 'reference forwarder CPU profile, self time by component');
    }

    const resultsDir = join(ROOT, 'bench/results');
    await mkdir(resultsDir, { recursive: true });
    const out = join(resultsDir, `${stamp}.json`);
    await writeFile(out, `${JSON.stringify({ ...b.results, notes: b.notes }, null, 2)}\n`);
    process.stdout.write(`\nJSON: ${out}\n`);
    return 0;
  } catch (err) {
    log(`FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  } finally {
    if (!interrupted) await cleanup();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${String(err)}\n`);
    process.exitCode = 1;
  },
);
