/**
 * `npm run bench:throws`: every exception thrown on tokenproxy's main thread while it forwards
 * requests, caught ones included, with where it was thrown. A thrown error costs ~5 µs (its stack is
 * captured), and Node's own code sometimes throws and catches on a path that looks innocent: on
 * Node 24, every cipher made from a Buffer key threw twice (the isKeyObject and isCryptoKey checks),
 * which was ~10-13 µs of each forwarded request (docs/performance.md, round four). Forwarded requests
 * (HTTP/1.1 and HTTP/2) and refused ones should throw nothing; run this after a Node upgrade. Uses the inspector's pause-on-exceptions
 * (`--inspect` on loopback), so it runs apart from bench/run.ts, whose CPU figures it would spoil.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectInspector } from './inspector.js';
import { Bench } from './load/bench.js';
import { ensureH2load } from './load/setup.js';
import { parseArgs } from './settings.js';
import { log } from './util.js';

const INSPECTOR_PORT = 9239;
const REQUESTS = 200;

/** The `Debugger.paused` event's parameters that the report reads. */
interface Paused {
  readonly data?: { readonly description?: string; readonly className?: string };
  readonly callFrames: readonly {
    readonly functionName: string;
    readonly url: string;
    readonly location: { readonly lineNumber: number };
  }[];
}

async function main(): Promise<number> {
  process.env.BENCH_PROXY_NODE_ARGS = `--inspect=127.0.0.1:${INSPECTOR_PORT}`;
  const tmp = await mkdtemp(join(tmpdir(), 'tokenproxy-throws-'));
  const b = new Bench(parseArgs([]), tmp);
  try {
    await ensureH2load(b.children);
    await b.startStandIn();
    const tp = await b.startTokenproxy('sqlite', undefined);
    const { token } = await b.createToken(tp, ['localhost']);
    // Forwarded over HTTP/1.1 and HTTP/2, and refused (a wrong Origin: 403, then 429 ip_backoff).
    const scenarios = [
      b.proxied('forwarded, HTTP/1.1', tp, token),
      b.proxied('forwarded, HTTP/2', tp, token, 'http://localhost', [200], 'h2'),
      b.proxied('refused', tp, token, 'http://evil.example', [403, 429]),
    ];
    // Warm first: what runs once (module loading, first connections) is not the per-request path.
    for (const sc of scenarios) await b.load(sc, { connections: 4, durationS: 1, warmS: 0, requests: 400 });

    const inspector = await connectInspector(INSPECTOR_PORT);
    let seen = new Map<string, number>();
    let thrown = 0;
    inspector.on('Debugger.paused', (params) => {
      const paused = params as Paused;
      thrown++;
      const frames = paused.callFrames
        .slice(0, 6)
        .map(
          (f) =>
            `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${f.location.lineNumber + 1}`,
        );
      const what = paused.data?.description?.split('\n')[0] ?? paused.data?.className ?? '?';
      const key = [what, ...frames].join('\n    ');
      seen.set(key, (seen.get(key) ?? 0) + 1);
      void inspector.call('Debugger.resume');
    });
    await inspector.call('Debugger.enable');
    let total = 0;
    for (const sc of scenarios) {
      thrown = 0;
      seen = new Map();
      await inspector.call('Debugger.setPauseOnExceptions', { state: 'all' });
      await new Promise((resolve) => setTimeout(resolve, 500));
      const run = await b.load(sc, { connections: 4, durationS: 1, warmS: 0, requests: REQUESTS });
      await inspector.call('Debugger.setPauseOnExceptions', { state: 'none' });
      await new Promise((resolve) => setTimeout(resolve, 500));
      process.stdout.write(
        `\n${sc.name}: ${run.total} requests, ${thrown} exceptions thrown on the proxy's thread\n`,
      );
      for (const [where, count] of [...seen].sort((x, y) => y[1] - x[1])) {
        process.stdout.write(`  ${count}× ${where}\n`);
      }
      total += thrown;
    }
    inspector.close();
    return total === 0 ? 0 : 1;
  } finally {
    await b.children.stopAll();
    await rm(tmp, { recursive: true, force: true });
    log('done');
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
