/**
 * The bench driver: starts the stand-in provider, the references and tokenproxy pinned to their CPUs,
 * creates tokens, and runs h2load scenarios interleaved round by round.
 */
import { newSanitizedToken, newTokenId, sanitizedKeyHint, secretDigest } from '../../src/ids/formats.js';
import type { Store } from '../../src/store/store.js';
import { gcAdd, gcSub, gcSummary, NO_GC, type GcTotals } from '../gc.js';
import { BenchFailure, h2load } from '../h2load.js';
import { Children, type Child } from '../procs.js';
import { fmt } from '../report.js';
import { ROOT, type Settings } from '../settings.js';
import { median, summarize } from '../stats.js';
import { log, CLK_TCK, cpuTicks, httpsJson, gcTotals, field } from '../util.js';
import { diagnosisNodeArgs } from './node-args.js';
import { makeCertificates } from './setup.js';
import type { Tokenproxy, Reference, Scenario, Interleaved } from './types.js';
import { createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export class Bench {
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

  /**
   * `taskset -c <cpu> <command…>` — the whole process, its worker threads included, on that CPU — or
   * the bare command with `--no-pin`. As [command, args] for Children.start.
   */
  onCpu(cpu: number, command: readonly string[]): [string, string[]] {
    if (!this.s.pin) return [command[0] as string, command.slice(1)];
    return ['taskset', ['-c', String(cpu), ...command]];
  }

  /** Runs one of the bench's own servers pinned to `cpu`; it prints `{"port":N}` once listening. */
  async startPinned(
    name: string,
    cpu: number,
    script: string,
    args: string[],
    nodeArgs: readonly string[] = [],
  ): Promise<{ child: Child; pid: number; port: number }> {
    const child = this.children.start(
      name,
      ...this.onCpu(cpu, [process.execPath, ...nodeArgs, join(ROOT, 'dist-bench/bench', script), ...args]),
    );
    const m = await this.children.waitFor(child, /\{"port":(\d+)\}/, 10_000);
    return { child, pid: child.pid, port: Number(m[1]) };
  }

  /**
   * The stand-in provider with its certificates and the one request body every scenario sends
   * (98-byte JSON). Returns the certificates, which the references serve too.
   */
  async startStandIn(): Promise<{ ca: string; cert: string; key: string }> {
    const tls = await makeCertificates(this.tmp);
    this.providerCa = tls.ca;
    this.bodyFile = join(this.tmp, 'body.json');
    await writeFile(
      this.bodyFile,
      '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}]}',
    );
    this.providerPort = await this.startProvider(tls.cert, tls.key);
    return tls;
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
    nodeArgs: readonly string[] = [],
  ): Promise<Reference> {
    // With --profile the references are profiled too (written when they stop), for comparison.
    const profiled =
      this.profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(this.profileDir, name)}`];
    const { child, pid, port } = await this.startPinned(
      label,
      0,
      script,
      [cert, key, this.providerCa, String(this.providerPort)],
      // The references take the same diagnosis flags when asked, so a probe compares like with like.
      [...profiled, ...nodeArgs, ...diagnosisNodeArgs('BENCH_REFERENCE_NODE_ARGS')],
    );
    // Diagnosis only: a reference's stdout (e.g. its `--trace-gc-nvp` lines) kept in `<file>.<name>`.
    const tee = process.env.BENCH_REFERENCE_STDOUT;
    if (tee !== undefined) child.proc.stdout?.pipe(createWriteStream(`${tee}.${name}`));
    const scenario: Scenario = {
      name,
      cpuPid: pid,
      url: `https://127.0.0.1:${port}/openai/v1/chat/completions`,
      headers: ['authorization: Bearer unused', 'origin: http://localhost', 'content-type: application/json'],
      expectStatus: [200],
    };
    return { child, pid, port, scenario };
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
    // Diagnosis only (e.g. `--trace-gc`): extra node flags for tokenproxy, its stdout kept in a file.
    nodeArgs.push(...diagnosisNodeArgs('BENCH_PROXY_NODE_ARGS'));
    const child = this.children.start(
      `tokenproxy (${name})`,
      ...this.onCpu(0, [
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
      ]),
    );
    const tee = process.env.BENCH_PROXY_STDOUT;
    if (tee !== undefined) child.proc.stdout?.pipe(createWriteStream(`${tee}.${name}`));
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
    protocol: 'h1' | 'h2' = 'h1',
  ): Scenario {
    return {
      name,
      protocol,
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
      protocol: sc.protocol,
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
    opts: {
      rate?: number;
      connections: number;
      rounds?: number;
      /** Closed loop: requests per measured run and per warm-up, instead of sizing them by time. */
      requests?: { readonly warmup: number; readonly run: number };
    },
  ): Promise<Map<string, Interleaved>> {
    const rounds = opts.rounds ?? this.s.rounds;
    const fixed = opts.requests;
    // Warm-up (connections, pools, JIT). In closed loop it also sizes the measured runs: -n is set
    // from the warm-up's rate so that a run lasts about durationS + warmS.
    const perRun = new Map<string, number>();
    for (const sc of scenarios) {
      const warm = await this.load(sc, {
        ...opts,
        durationS: this.s.warmupS,
        warmS: 0,
        requests: fixed?.warmup ?? opts.connections * (this.s.quick ? 8 : 30),
      });
      perRun.set(sc.name, fixed?.run ?? Math.round(warm.rps * (this.s.durationS + this.s.warmS)));
    }
    const lat = new Map<string, number[]>();
    const rps = new Map<string, number[]>();
    const cpu = new Map<string, number[]>();
    const gc = new Map<string, { totals: GcTotals; requests: number }>();
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? scenarios : [...scenarios].reverse();
      for (const sc of order) {
        const res = await this.load(sc, {
          ...opts,
          durationS: this.s.durationS,
          warmS: this.s.warmS,
          requests: perRun.get(sc.name),
        });
        const latencies = lat.get(sc.name) ?? [];
        lat.set(sc.name, latencies);
        // Not push(...values): spread arguments overflow the stack past ~120,000 values, which a
        // closed-loop run of the direct leg reaches on a fast machine.
        for (const ms of res.latenciesMs) latencies.push(ms);
        (rps.get(sc.name) ?? rps.set(sc.name, []).get(sc.name) ?? []).push(res.rps);
        (cpu.get(sc.name) ?? cpu.set(sc.name, []).get(sc.name) ?? []).push(res.cpuUsPerRequest);
        const seen = gc.get(sc.name) ?? { totals: NO_GC, requests: 0 };
        gc.set(sc.name, { totals: gcAdd(seen.totals, res.gc), requests: seen.requests + res.total });
        log(
          `${label} round ${r + 1}/${rounds} ${sc.name}: ${res.rps.toFixed(0)} req/s, ${res.latenciesMs.length} requests, ${res.cpuUsPerRequest.toFixed(0)} µs CPU/request`,
        );
      }
    }
    const out = new Map<string, Interleaved>();
    for (const sc of scenarios) {
      const rpsRounds = rps.get(sc.name) ?? [];
      const collected = gc.get(sc.name);
      out.set(sc.name, {
        lat: summarize(lat.get(sc.name) ?? []),
        rps: median(rpsRounds),
        rpsRounds,
        cpuUs: median(cpu.get(sc.name) ?? []),
        cpuRounds: cpu.get(sc.name) ?? [],
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
