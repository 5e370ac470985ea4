/**
 * `npm run bench [-- --quick] [-- --profile] [-- --only latency,throughput,…] [-- --keep]`
 *
 * Starts, on loopback only, a stand-in HTTPS provider (own process, CPU 1) and `bin/tokenproxy serve`
 * (CPU 0), then measures direct (load generator → stand-in) against proxied (load generator → proxy
 * → stand-in) runs, interleaved round by round so that machine drift hits both alike. The driver
 * and the load generator (h2load) run on CPU 1. See docs/performance.md.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newSanitizedToken, newTokenId, sanitizedKeyHint, secretDigest } from '../src/ids/formats.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { gcAdd, gcSub, gcSummary, NO_GC, parseGcTotals, type GcTotals } from './gc.js';
import { BenchFailure, h2load } from './h2load.js';
import { Children, type Child } from './procs.js';
import {
  foldedStacks,
  printProfileTop,
  selfByComponent,
  topSelfFrames,
  type CpuProfile,
  type Frame,
} from './profile.js';
import { holdStreams, timeStream, type Target } from './sse.js';
import { difference, median, pairedRatios, round, summarize, type Percentiles } from './stats.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PHASES = ['latency', 'throughput', 'streaming', 'memory', 'origins', 'store', 'tokens'] as const;
type Phase = (typeof PHASES)[number];

interface Settings {
  readonly quick: boolean;
  readonly profile: boolean;
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
  readonly rates: readonly number[];
  readonly concurrencies: readonly number[];
}

function parseArgs(argv: readonly string[]): Settings {
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
  return {
    quick,
    profile: argv.includes('--profile'),
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
    rates: [500, 1000],
    concurrencies: [32, 128],
  };
}

// ---- small helpers ---------------------------------------------------------------------------

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function rssMb(pid: number): number {
  const status = execFileSync('cat', [`/proc/${pid}/status`], { encoding: 'utf8' });
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  if (kb === undefined) throw new BenchFailure(`no VmRSS for pid ${pid}`);
  return Number(kb) / 1024;
}

const CLK_TCK = 100;

/** utime + stime of a process, in clock ticks (1/CLK_TCK s). */
function cpuTicks(pid: number): number {
  const stat = execFileSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' });
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5), counted from after the command name (which is field 2).
  return Number(fields[11]) + Number(fields[12]);
}

function httpsJson(
  url: string,
  method: string,
  ca: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const sent = payload === undefined ? headers : { ...headers, 'content-type': 'application/json' };
  return httpsText(url, method, ca, sent, payload).then(({ status, text }) => {
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status, json };
  });
}

function httpsText(
  url: string,
  method: string,
  ca: string,
  headers: Record<string, string>,
  payload?: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolvePromise, reject) => {
    const req = request(url, { method, ca, agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (s: string) => (text += s));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** The proxy's garbage collections so far, from its /metrics (see gc.ts). */
async function gcTotals(metrics: { readonly url: string; readonly ca: string }): Promise<GcTotals> {
  const { status, text } = await httpsText(metrics.url, 'GET', metrics.ca, {});
  if (status !== 200) throw new BenchFailure(`GET ${metrics.url} answered ${status}`);
  return parseGcTotals(text);
}

function field(value: unknown, name: string): string {
  const v = (value as Record<string, unknown> | null)?.[name];
  if (typeof v !== 'string')
    throw new BenchFailure(`expected string field "${name}" in ${JSON.stringify(value)}`);
  return v;
}

// ---- processes ---------------------------------------------------------------------------------

interface Tokenproxy {
  readonly child: Child;
  readonly apiUrl: string;
  readonly proxyUrl: string;
  readonly ca: string;
  readonly apiKey: string;
  readonly accountId: string;
}

/** A bench server that forwards to the stand-in (forwarder, relay), pinned to CPU 0 like tokenproxy. */
interface Reference {
  readonly pid: number;
  readonly port: number;
  /** Its throughput and latency scenario: the proxied request, with a token it ignores. */
  readonly scenario: Scenario;
}

interface Scenario {
  readonly name: string;
  /** Process whose CPU time is charged to this scenario (the proxy, or the stand-in when direct). */
  readonly cpuPid: number;
  readonly url: string;
  readonly headers: readonly string[];
  readonly expectStatus: readonly number[];
  /** tokenproxy's /metrics, read around each run for its garbage collections. */
  readonly metrics?: { readonly url: string; readonly ca: string };
}

/** One scenario's result over the rounds of `interleaved`. */
interface Interleaved {
  readonly lat: Percentiles;
  /** Median over rounds. */
  readonly rps: number;
  readonly rpsRounds: number[];
  readonly cpuUs: number;
  /** tokenproxy's garbage collections over the measured runs (gc.ts); undefined for other systems. */
  readonly gc: Record<string, number> | undefined;
}

class Bench {
  readonly s: Settings;
  readonly children = new Children();
  readonly tmp: string;
  readonly results: Record<string, unknown> = {};
  readonly table: string[][] = [];
  readonly notes: string[] = [];
  readonly cleanups: (() => Promise<void>)[] = [];
  bodyFile = '';
  providerCa = '';
  providerPort = 0;
  providerPid = 0;
  profileDir: string | undefined;

  constructor(settings: Settings, tmp: string) {
    this.s = settings;
    this.tmp = tmp;
  }

  // -- setup --

  async ensureH2load(): Promise<string> {
    const version = (): string | undefined => {
      try {
        return execFileSync('h2load', ['--version'], { encoding: 'utf8' }).trim();
      } catch {
        return undefined;
      }
    };
    let v = version();
    if (v !== undefined) return v;
    log('h2load missing: installing nghttp2-client with apt-get');
    const apt = await this.children.run(
      'apt-get',
      'sh',
      ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client'],
      300_000,
    );
    v = version();
    if (v === undefined) {
      throw new BenchFailure(
        `h2load (Debian package nghttp2-client) is not installed and could not be installed:\n${apt.stderr.slice(-1500)}`,
      );
    }
    return v;
  }

  async makeCertificates(): Promise<{ ca: string; cert: string; key: string }> {
    const d = join(this.tmp, 'provider-tls');
    await mkdir(d);
    const ssl = (args: string[]): void => {
      execFileSync('openssl', args, { stdio: 'ignore' });
    };
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    ssl(
      ['req', '-x509', ...ec, '-keyout', join(d, 'ca.key'), '-out', join(d, 'ca.pem'), '-days', '2']
        .concat(['-subj', '/CN=tokenproxy bench CA', '-addext', 'basicConstraints=critical,CA:TRUE'])
        .concat(['-addext', 'keyUsage=critical,keyCertSign']),
    );
    ssl([
      'req',
      ...ec,
      '-keyout',
      join(d, 'leaf.key'),
      '-out',
      join(d, 'leaf.csr'),
      '-subj',
      '/CN=127.0.0.1',
    ]);
    await writeFile(
      join(d, 'ext.cnf'),
      'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n',
    );
    ssl(
      [
        'x509',
        '-req',
        '-in',
        join(d, 'leaf.csr'),
        '-CA',
        join(d, 'ca.pem'),
        '-CAkey',
        join(d, 'ca.key'),
      ].concat([
        '-CAcreateserial',
        '-out',
        join(d, 'leaf.pem'),
        '-days',
        '2',
        '-extfile',
        join(d, 'ext.cnf'),
      ]),
    );
    return { ca: join(d, 'ca.pem'), cert: join(d, 'leaf.pem'), key: join(d, 'leaf.key') };
  }

  /** Runs one of the bench's own servers pinned to `cpu`; it prints `{"port":N}` once listening. */
  async startPinned(
    name: string,
    cpu: number,
    script: string,
    args: string[],
  ): Promise<{ pid: number; port: number }> {
    const child = this.children.start(name, 'taskset', [
      '-c',
      String(cpu),
      process.execPath,
      join(ROOT, 'dist-bench/bench', script),
      ...args,
    ]);
    const m = await this.children.waitFor(child, /\{"port":(\d+)\}/, 10_000);
    return { pid: child.pid, port: Number(m[1]) };
  }

  async startProvider(cert: string, key: string): Promise<number> {
    const { pid, port } = await this.startPinned('stand-in provider', 1, 'provider.js', [cert, key]);
    this.providerPid = pid;
    return port;
  }

  /**
   * Starts `script` (forwarder.js, relay.js) on CPU 0 in front of the stand-in. The reference forwarder
   * is the least a Node credential proxy can do; the raw TLS relay the floor under any Node TLS proxy.
   */
  async startReference(
    name: string,
    label: string,
    script: string,
    cert: string,
    key: string,
  ): Promise<Reference> {
    const { pid, port } = await this.startPinned(label, 0, script, [
      cert,
      key,
      this.providerCa,
      String(this.providerPort),
    ]);
    const scenario: Scenario = {
      name,
      cpuPid: pid,
      url: `https://127.0.0.1:${port}/openai/v1/chat/completions`,
      headers: ['authorization: Bearer unused', 'origin: http://localhost', 'content-type: application/json'],
      expectStatus: [200],
    };
    return { pid, port, scenario };
  }

  async startTokenproxy(name: string, database: string | undefined): Promise<Tokenproxy> {
    const dataDir = join(this.tmp, `data-${name}`);
    const configFile = join(this.tmp, `config-${name}.json`);
    await writeFile(
      configFile,
      JSON.stringify({
        providers: { openai: { base_url: `https://127.0.0.1:${this.providerPort}`, auth: 'bearer' } },
      }),
    );
    const common = ['--data-dir', dataDir, ...(database === undefined ? [] : ['--database', database])];
    const created = await this.children.run(
      'accounts create',
      process.execPath,
      [
        join(ROOT, 'bin/tokenproxy'),
        'accounts',
        'create',
        '--name',
        'bench',
        '--plan',
        'unlimited',
        '--json',
        ...common,
      ],
      60_000,
    );
    if (created.code !== 0) throw new BenchFailure(`accounts create failed: ${created.stderr}`);
    const account = JSON.parse(created.stdout) as unknown;
    const nodeArgs: string[] = [];
    if (this.profileDir !== undefined && name === 'sqlite') {
      nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${this.profileDir}`);
    }
    const child = this.children.start(`tokenproxy (${name})`, 'taskset', [
      '-c',
      '0',
      process.execPath,
      ...nodeArgs,
      join(ROOT, 'bin/tokenproxy'),
      'serve',
      ...common,
      '--config',
      configFile,
      '--provider-ca',
      this.providerCa,
      '--api-port',
      '0',
      '--proxy-port',
      '0',
      '--log-level',
      'warn',
    ]);
    await this.children.waitFor(child, /^Ready\./m, 30_000);
    const api = /management API\s+(https:\/\/[\d.]+:\d+)\/v1/.exec(child.stderr)?.[1];
    const proxy = /proxy\s+(https:\/\/[\d.]+:\d+)/.exec(child.stderr)?.[1];
    if (api === undefined || proxy === undefined)
      throw new BenchFailure(`cannot read listener addresses:\n${child.stderr}`);
    const ca = await readFile(join(dataDir, 'tls/cert.pem'), 'utf8');
    return {
      child,
      apiUrl: api,
      proxyUrl: proxy,
      ca,
      apiKey: field(account, 'api_key'),
      accountId: field(account, 'account_id'),
    };
  }

  /** A token for the stand-in created through the management API: [sanitized token, key id]. */
  async createToken(tp: Tokenproxy, hosts: string[]): Promise<{ token: string; keyId: string }> {
    const { status, json } = await httpsJson(
      `${tp.apiUrl}/v1/tokens`,
      'POST',
      tp.ca,
      { authorization: `Bearer ${tp.apiKey}` },
      {
        name: 'bench',
        provider: 'openai',
        real_key: 'sk-bench-0123456789abcdefghijklmnop',
        allowed_hosts: hosts,
      },
    );
    if (status !== 201) throw new BenchFailure(`token creation answered ${status}: ${JSON.stringify(json)}`);
    return { token: field(json, 'sanitized_key'), keyId: field(json, 'real_key_ref') };
  }

  /** Inserts tokens straight into the store (digests only, as the API would store them). */
  async insertTokens(
    store: Store,
    accountId: string,
    keyId: string,
    count: number,
    origins: readonly string[] = ['localhost'],
  ): Promise<string[]> {
    const tokens: string[] = [];
    const createdAt = new Date().toISOString();
    for (let i = 0; i < count; i++) {
      const token = newSanitizedToken();
      tokens.push(token);
      await store.tokens.create({
        token: {
          id: newTokenId(),
          accountId,
          name: `filler ${i}`,
          provider: 'openai',
          digest: secretDigest(token),
          hint: sanitizedKeyHint(token),
          authorizedOrigins: origins,
          authorizedIps: [],
          rateLimit: null,
          expiresAt: null,
          createdAt,
        },
        key: { existingKeyId: keyId },
        maxActiveTokens: null,
      });
    }
    return tokens;
  }

  // -- measuring --

  direct(): Scenario {
    return {
      name: 'direct',
      cpuPid: this.providerPid,
      url: `https://127.0.0.1:${this.providerPort}/v1/chat/completions`,
      headers: [
        'authorization: Bearer sk-bench-0123456789abcdefghijklmnop',
        'origin: http://localhost',
        'content-type: application/json',
      ],
      expectStatus: [200],
    };
  }

  proxied(
    name: string,
    tp: Tokenproxy,
    token: string,
    origin = 'http://localhost',
    expectStatus: readonly number[] = [200],
  ): Scenario {
    return {
      name,
      cpuPid: tp.child.pid,
      url: `${tp.proxyUrl}/openai/v1/chat/completions`,
      headers: [`authorization: Bearer ${token}`, `origin: ${origin}`, 'content-type: application/json'],
      expectStatus,
      metrics: { url: `${tp.apiUrl}/metrics`, ca: tp.ca },
    };
  }

  async load(
    sc: Scenario,
    opts: { rate?: number; connections: number; durationS: number; warmS: number; requests?: number },
  ): Promise<{ latenciesMs: number[]; rps: number; cpuUsPerRequest: number; total: number; gc: GcTotals }> {
    // Read before the CPU ticks start counting, and after they stop: a scrape is not a request.
    const gcBefore = sc.metrics === undefined ? NO_GC : await gcTotals(sc.metrics);
    const before = cpuTicks(sc.cpuPid);
    const res = await h2load(this.children, {
      url: sc.url,
      headers: sc.headers,
      bodyFile: this.bodyFile,
      connections: opts.connections,
      rate: opts.rate,
      requests: opts.requests,
      durationS: opts.durationS,
      warmS: opts.warmS,
      logFile: join(this.tmp, 'h2load.tsv'),
      expectStatus: sc.expectStatus,
    });
    const ticks = cpuTicks(sc.cpuPid) - before;
    const gc = sc.metrics === undefined ? NO_GC : gcSub(await gcTotals(sc.metrics), gcBefore);
    return { ...res, cpuUsPerRequest: (ticks * (1e6 / CLK_TCK)) / res.total, gc };
  }

  /**
   * Runs every scenario once per round, the order reversed every other round, and pools the
   * latencies of all rounds per scenario. Throughput is the median over rounds.
   */
  async interleaved(
    label: string,
    scenarios: readonly Scenario[],
    opts: { rate?: number; connections: number },
  ): Promise<Map<string, Interleaved>> {
    // Warm-up (connections, pools, JIT). In closed loop it also sizes the measured runs: -n is set
    // from the warm-up's rate so that a run lasts about durationS + warmS.
    const perRun = new Map<string, number>();
    for (const sc of scenarios) {
      const warm = await this.load(sc, {
        ...opts,
        durationS: this.s.warmupS,
        warmS: 0,
        requests: opts.connections * (this.s.quick ? 8 : 30),
      });
      perRun.set(sc.name, Math.round(warm.rps * (this.s.durationS + this.s.warmS)));
    }
    const lat = new Map<string, number[]>();
    const rps = new Map<string, number[]>();
    const cpu = new Map<string, number[]>();
    const gc = new Map<string, { totals: GcTotals; requests: number }>();
    for (let r = 0; r < this.s.rounds; r++) {
      const order = r % 2 === 0 ? scenarios : [...scenarios].reverse();
      for (const sc of order) {
        const res = await this.load(sc, {
          ...opts,
          durationS: this.s.durationS,
          warmS: this.s.warmS,
          requests: perRun.get(sc.name),
        });
        (lat.get(sc.name) ?? lat.set(sc.name, []).get(sc.name) ?? []).push(...res.latenciesMs);
        (rps.get(sc.name) ?? rps.set(sc.name, []).get(sc.name) ?? []).push(res.rps);
        (cpu.get(sc.name) ?? cpu.set(sc.name, []).get(sc.name) ?? []).push(res.cpuUsPerRequest);
        const seen = gc.get(sc.name) ?? { totals: NO_GC, requests: 0 };
        gc.set(sc.name, { totals: gcAdd(seen.totals, res.gc), requests: seen.requests + res.total });
        log(
          `${label} round ${r + 1}/${this.s.rounds} ${sc.name}: ${res.rps.toFixed(0)} req/s, ${res.latenciesMs.length} requests, ${res.cpuUsPerRequest.toFixed(0)} µs CPU/request`,
        );
      }
    }
    const out = new Map<string, Interleaved>();
    for (const sc of scenarios) {
      const rounds = rps.get(sc.name) ?? [];
      const collected = gc.get(sc.name);
      out.set(sc.name, {
        lat: summarize(lat.get(sc.name) ?? []),
        rps: median(rounds),
        rpsRounds: rounds,
        cpuUs: median(cpu.get(sc.name) ?? []),
        gc:
          sc.metrics === undefined || collected === undefined
            ? undefined
            : gcSummary(collected.totals, collected.requests),
      });
    }
    return out;
  }

  row(...cells: (string | number)[]): void {
    this.table.push(cells.map((c) => (typeof c === 'number' ? fmt(c) : c)));
  }
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(3);
}

function ppp(p: { p50: number; p90: number; p99: number }): string {
  return `${fmt(p.p50)} / ${fmt(p.p90)} / ${fmt(p.p99)}`;
}

/** "(rounds 0.26–0.36)": the spread of the per-round ratios, so a reader sees how far one run moves. */
function ratioRange(a: readonly number[], b: readonly number[]): string {
  const ratios = pairedRatios(a, b);
  if (ratios.length < 2) return '';
  return `(rounds ${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))})`;
}

function roundP(p: Percentiles | { p50: number; p90: number; p99: number }): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(p)) out[k] = round(v as number, 4);
  return out;
}

function printTable(rows: readonly string[][]): void {
  const widths: number[] = [];
  for (const row of rows) row.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  for (const [i, row] of rows.entries()) {
    process.stdout.write(
      `${row
        .map((c, j) => c.padEnd(widths[j] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
    if (i === 0) process.stdout.write(`${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
  }
}

// ---- the phases --------------------------------------------------------------------------------

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
    if (cores < 2) throw new BenchFailure(`the bench pins to CPUs 0 and 1 but this machine has ${cores} CPU`);
    // The driver's own threads (and every child it starts without taskset) go to CPU 1.
    execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    if (cores > 2) pinning += ` (${cores} CPUs present; the others stay unused)`;
    const h2loadVersion = await b.ensureH2load();
    log(`${s.quick ? 'quick' : 'full'} run; ${pinning}; ${h2loadVersion}`);

    const tls = await b.makeCertificates();
    b.providerCa = tls.ca;
    b.bodyFile = join(tmp, 'body.json');
    await writeFile(
      b.bodyFile,
      '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}]}',
    );
    b.providerPort = await b.startProvider(tls.cert, tls.key);
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
    if (s.profile) {
      b.profileDir = join(ROOT, 'bench/results', `profile-${stamp}`);
      await mkdir(b.profileDir, { recursive: true });
    }
    const tp = await b.startTokenproxy('sqlite', undefined);
    const { token, keyId } = await b.createToken(tp, ['localhost']);
    const direct = b.direct();
    const proxy = b.proxied('proxy', tp, token);
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
        'POST /v1/chat/completions, 98-byte JSON body; answer 619-byte JSON; HTTP/1.1 over TLS 1.3, keep-alive',
    };
    b.row('measurement', 'direct', 'proxy', 'added by proxy', 'unit');

    if (s.only.has('latency')) {
      const out: Record<string, unknown> = {};
      for (const rate of s.rates) {
        const connections = Math.max(1, Math.round(rate / 25));
        const r = await b.interleaved(`latency ${rate}/s`, [direct, proxy, forwarder], {
          rate,
          connections,
        });
        const d = r.get('direct');
        const p = r.get('proxy');
        const w = r.get('forwarder');
        if (d === undefined || p === undefined || w === undefined) throw new Error('missing result');
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
          proxy_gc: p.gc,
        };
        b.row(`latency @${rate} req/s open loop, p50/p90/p99`, ppp(d.lat), ppp(p.lat), ppp(added), 'ms');
        b.row(`  reference forwarder @${rate} req/s`, '', ppp(w.lat), ppp(difference(d.lat, w.lat)), 'ms');
        b.row(
          `  CPU per request @${rate} req/s (stand-in / proxy / forwarder)`,
          d.cpuUs,
          `${fmt(p.cpuUs)} / ${fmt(w.cpuUs)}`,
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

    if (s.only.has('throughput')) {
      const out: Record<string, unknown> = {};
      // One attacking IP: after its first refusals it is answered 429 ip_backoff (DESIGN §6), which is
      // the path a real flood takes, so both statuses count as refusals here.
      const refused = b.proxied('refused', tp, token, 'http://evil.example', [403, 429]);
      for (const connections of s.concurrencies) {
        const r = await b.interleaved(
          `throughput c=${connections}`,
          [direct, proxy, refused, forwarder, relay],
          {
            connections,
          },
        );
        const d = r.get('direct');
        const p = r.get('proxy');
        const f = r.get('refused');
        const w = r.get('forwarder');
        const x = r.get('relay');
        if (d === undefined || p === undefined || f === undefined || w === undefined || x === undefined)
          throw new Error('missing result');
        out[`${connections}`] = {
          direct_rps: round(d.rps, 1),
          proxy_rps: round(p.rps, 1),
          refused_403_rps: round(f.rps, 1),
          forwarder_rps: round(w.rps, 1),
          relay_rps: round(x.rps, 1),
          proxy_over_direct: round(p.rps / d.rps, 3),
          forwarder_over_direct: round(w.rps / d.rps, 3),
          proxy_over_direct_by_round: pairedRatios(p.rpsRounds, d.rpsRounds),
          forwarder_over_direct_by_round: pairedRatios(w.rpsRounds, d.rpsRounds),
          relay_over_direct: round(x.rps / d.rps, 3),
          relay_over_direct_by_round: pairedRatios(x.rpsRounds, d.rpsRounds),
          refused_over_proxy: round(f.rps / p.rps, 3),
          cpu_us_per_request: {
            stand_in_direct: round(d.cpuUs, 0),
            proxy: round(p.cpuUs, 0),
            proxy_refused: round(f.cpuUs, 0),
            forwarder: round(w.cpuUs, 0),
            relay: round(x.cpuUs, 0),
          },
          rounds: {
            direct: d.rpsRounds,
            proxy: p.rpsRounds,
            refused: f.rpsRounds,
            forwarder: w.rpsRounds,
            relay: x.rpsRounds,
          },
          latency: {
            direct: roundP(d.lat),
            proxy: roundP(p.lat),
            refused: roundP(f.lat),
            forwarder: roundP(w.lat),
            relay: roundP(x.lat),
          },
        };
        b.row(
          `throughput, closed loop, ${connections} connections`,
          d.rps,
          p.rps,
          `ratio ${fmt(p.rps / d.rps)} ${ratioRange(p.rpsRounds, d.rpsRounds)}`,
          'req/s',
        );
        b.row(
          `  reference forwarder, ${connections} conns`,
          '',
          `${fmt(w.rps)} (${fmt(w.cpuUs)} µs CPU/req)`,
          `ratio ${fmt(w.rps / d.rps)} ${ratioRange(w.rpsRounds, d.rpsRounds)}`,
          'req/s',
        );
        b.row(
          `  raw TLS relay (floor, no HTTP), ${connections} conns`,
          '',
          `${fmt(x.rps)} (${fmt(x.cpuUs)} µs CPU/req)`,
          `ratio ${fmt(x.rps / d.rps)} ${ratioRange(x.rpsRounds, d.rpsRounds)}`,
          'req/s',
        );
        b.row(
          `  refusal path (403/429, wrong Origin), ${connections} conns`,
          '',
          f.rps,
          `${fmt(f.rps / p.rps)}× forwarded`,
          'req/s',
        );
        b.row(
          `  CPU per request, ${connections} conns (stand-in / proxy fwd / proxy 403)`,
          d.cpuUs,
          `${fmt(p.cpuUs)} / ${fmt(f.cpuUs)}`,
          '',
          'µs',
        );
      }
      b.results.throughput = out;
    }

    if (s.only.has('streaming')) {
      const agentD = new Agent({ keepAlive: true, maxSockets: Infinity });
      const agentP = new Agent({ keepAlive: true, maxSockets: Infinity });
      const tD: Target = {
        origin: `https://127.0.0.1:${b.providerPort}`,
        prefix: '',
        ca: await readFile(tls.ca, 'utf8'),
        headers: { authorization: 'Bearer sk-bench', origin: 'http://localhost' },
      };
      const tP: Target = {
        origin: tp.proxyUrl,
        prefix: '/openai',
        ca: tp.ca,
        headers: { authorization: `Bearer ${token}`, origin: 'http://localhost' },
      };
      const first = { direct: [] as number[], proxy: [] as number[] };
      const chunk = { direct: [] as number[], proxy: [] as number[] };
      const firstDelay = { direct: [] as number[], proxy: [] as number[] };
      // Warm both paths (connections, JIT) before timing.
      await Promise.all([timeStream(tD, agentD, 3, 10), timeStream(tP, agentP, 3, 10)]);
      for (let r = 0; r < s.streamRounds; r++) {
        const order: ['direct' | 'proxy', Target, Agent][] = [
          ['direct', tD, agentD],
          ['proxy', tP, agentP],
        ];
        if (r % 2 === 1) order.reverse();
        for (const [name, target, agent] of order) {
          const timings = await Promise.all(
            Array.from({ length: s.streamsPerRound }, () => timeStream(target, agent, 20, 50)),
          );
          for (const t of timings) {
            first[name].push(t.firstChunkMs);
            chunk[name].push(...t.chunkDelaysMs);
            firstDelay[name].push(t.firstChunkDelayMs);
          }
        }
      }
      agentD.destroy();
      agentP.destroy();
      const fd = summarize(first.direct);
      const fp = summarize(first.proxy);
      const cd = summarize(chunk.direct);
      const cp = summarize(chunk.proxy);
      const dd = summarize(firstDelay.direct);
      const dp = summarize(firstDelay.proxy);
      b.results.streaming = {
        streams_each: first.direct.length,
        chunks_each: chunk.direct.length,
        stream: '20 chunks, 50 ms apart; 5 concurrent streams per round',
        first_chunk_ms: { direct: roundP(fd), proxy: roundP(fp), added: roundP(difference(fd, fp)) },
        chunk_delay_ms: { direct: roundP(cd), proxy: roundP(cp), added: roundP(difference(cd, cp)) },
        first_chunk_delay_ms: { direct: roundP(dd), proxy: roundP(dp), added: roundP(difference(dd, dp)) },
      };
      b.row('streaming: time to first chunk, p50/p90/p99', ppp(fd), ppp(fp), ppp(difference(fd, fp)), 'ms');
      b.row('streaming: per-chunk delay, p50/p90/p99', ppp(cd), ppp(cp), ppp(difference(cd, cp)), 'ms');
      b.row(
        'streaming: first chunk, write → arrival, p50/p90/p99',
        ppp(dd),
        ppp(dp),
        ppp(difference(dd, dp)),
        'ms',
      );
    }

    if (s.only.has('memory')) {
      const idle = rssMb(tp.child.pid);
      const target: Target = {
        origin: tp.proxyUrl,
        prefix: '/openai',
        ca: tp.ca,
        headers: { authorization: `Bearer ${token}`, origin: 'http://localhost' },
      };
      // Opens the streams, samples the process's RSS for 2 s, closes them: the peak.
      const peakWith = async (through: Target, pid: number): Promise<number> => {
        const held = await holdStreams(through, s.heldStreams, 50, 300);
        let peak = 0;
        for (let i = 0; i < 5; i++) {
          await sleep(400);
          peak = Math.max(peak, rssMb(pid));
        }
        held.close();
        return peak;
      };
      log(`memory: opening ${s.heldStreams} streams through the proxy`);
      const peak = await peakWith(target, tp.child.pid);
      // The same streams through the reference forwarder (what two TLS sockets and an undici request
      // per stream cost in Node itself) and through the raw TLS relay (two TLS sockets and nothing else).
      const benchCa = await readFile(tls.ca, 'utf8');
      const idleAndPeak = async (ref: Reference): Promise<[number, number]> => {
        const idleMb = rssMb(ref.pid);
        const through = { ...target, origin: `https://127.0.0.1:${ref.port}`, ca: benchCa };
        return [idleMb, await peakWith(through, ref.pid)];
      };
      const [forwarderIdle, forwarderPeak] = await idleAndPeak(forwarderRef);
      const [relayIdle, relayPeak] = await idleAndPeak(relayRef);
      await sleep(1500);
      const after = rssMb(tp.child.pid);
      b.results.memory = {
        rss_mb_at_start: round(rssIdleStart, 1),
        rss_mb_idle_before_streams: round(idle, 1),
        open_streams: s.heldStreams,
        rss_mb_with_open_streams: round(peak, 1),
        rss_mb_after_close: round(after, 1),
        forwarder: {
          rss_mb_idle: round(forwarderIdle, 1),
          rss_mb_with_open_streams: round(forwarderPeak, 1),
        },
        relay: {
          rss_mb_idle: round(relayIdle, 1),
          rss_mb_with_open_streams: round(relayPeak, 1),
        },
      };
      b.row(
        'proxy RSS idle (at start / before streams)',
        '',
        `${fmt(rssIdleStart)} / ${fmt(idle)}`,
        '',
        'MB',
      );
      b.row(`proxy RSS with ${s.heldStreams} open streams`, '', peak, '', 'MB');
      b.row(
        `  reference forwarder RSS idle / with ${s.heldStreams} streams`,
        '',
        `${fmt(forwarderIdle)} / ${fmt(forwarderPeak)}`,
        '',
        'MB',
      );
      b.row(
        `  raw TLS relay (floor) RSS idle / with ${s.heldStreams} streams`,
        '',
        `${fmt(relayIdle)} / ${fmt(relayPeak)}`,
        '',
        'MB',
      );
    }

    let store: Store | undefined;
    const openedStore = async (): Promise<Store> => {
      if (store === undefined) {
        const opened = await openStore({ database: undefined, dataDir: join(tmp, 'data-sqlite') });
        store = opened;
        b.cleanups.push(() => opened.close());
      }
      return store;
    };

    if (s.only.has('origins')) {
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

    if (s.only.has('store')) {
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

    if (s.only.has('tokens')) {
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

    b.results.rss_mb_at_end = round(rssMb(tp.child.pid), 1);

    // Stop the proxy now, so that a --cpu-prof profile is written before it is read.
    await b.children.stop(tp.child, 15_000);
    let profile: Frame[] | undefined;
    let components: Frame[] | undefined;
    if (b.profileDir !== undefined) {
      // One profile per thread: CPU.<date>.<time>.<pid>.<thread id>.<n>.cpuprofile; thread 0 is the
      // proxy's own, the other is the log worker's. Each gets folded stacks for a flame graph.
      const files = readdirSync(b.profileDir).filter((f) => f.endsWith('.cpuprofile'));
      const main = files.find((f) => /\.0\.\d+\.cpuprofile$/.test(f)) ?? files[0];
      const profiles: Record<string, unknown> = {};
      for (const file of files) {
        const path = join(b.profileDir, file);
        const parsed = JSON.parse(await readFile(path, 'utf8')) as CpuProfile;
        await writeFile(`${path}.folded`, foldedStacks(parsed));
        const byComponent = selfByComponent(parsed).slice(0, 20);
        profiles[file] = { folded: `${path}.folded`, by_component: byComponent };
        if (file === main) {
          profile = topSelfFrames(parsed, 30);
          components = byComponent;
          profiles[file] = { ...(profiles[file] as object), top_self: profile };
        }
      }
      b.results.profile = { dir: b.profileDir, main_thread: main, profiles };
    }

    process.stdout.write(
      `\ntokenproxy bench, ${started.toISOString()} (${s.quick ? 'quick' : 'full'} mode)\n`,
    );
    process.stdout.write(`pinning: ${pinning}\n`);
    process.stdout.write(
      `load: h2load --h1 (TLS 1.3, keep-alive); open loop = paced by --rps, 25 req/s per connection\n\n`,
    );
    printTable(b.table);
    for (const note of b.notes) process.stdout.write(`note: ${note}\n`);
    if (profile !== undefined) printProfileTop(profile);
    if (components !== undefined) printProfileTop(components, 'proxy CPU profile, self time by component');

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
