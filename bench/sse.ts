import { Agent, request } from 'node:https';
import { performance } from 'node:perf_hooks';
import { BenchFailure } from './h2load.js';

export interface Target {
  /** `https://127.0.0.1:<port>` */
  readonly origin: string;
  /** Path prefix: '' direct, '/openai' through the proxy. */
  readonly prefix: string;
  readonly ca: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface StreamTiming {
  /** Request written → first SSE chunk received, ms. */
  readonly firstChunkMs: number;
  /** For each chunk: arrival wall clock − the stand-in's wall clock when it wrote the chunk, ms. */
  readonly chunkDelaysMs: number[];
  /** The same for the stream's first chunk alone (DESIGN §11: forwarded within 1 ms of its arrival). */
  readonly firstChunkDelayMs: number;
}

const STAMP = /"t":(\d+(?:\.\d+)?)/g;

function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

/** One SSE request; resolves when the stream ends with `[DONE]`. */
export function timeStream(
  target: Target,
  agent: Agent,
  chunks: number,
  intervalMs: number,
): Promise<StreamTiming> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let firstChunkMs = -1;
    const delays: number[] = [];
    let pending = '';
    const req = request(
      `${target.origin}${target.prefix}/v1/chat/completions?chunks=${chunks}&interval=${intervalMs}`,
      {
        method: 'POST',
        agent,
        ca: target.ca,
        headers: { ...target.headers, 'content-type': 'application/json' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(
            new BenchFailure(
              `stream answered ${res.statusCode ?? '?'} from ${target.origin}${target.prefix}`,
            ),
          );
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          const arrived = wallMs();
          if (firstChunkMs < 0) firstChunkMs = performance.now() - started;
          pending += text;
          const cut = pending.lastIndexOf('\n\n');
          if (cut === -1) return;
          const events = pending.slice(0, cut);
          pending = pending.slice(cut + 2);
          for (const m of events.matchAll(STAMP)) delays.push(arrived - Number(m[1]));
        });
        res.on('end', () => {
          const first = delays[0];
          if (delays.length !== chunks || first === undefined) {
            reject(
              new BenchFailure(
                `stream from ${target.prefix || 'direct'} had ${delays.length}/${chunks} chunks`,
              ),
            );
          } else {
            resolve({ firstChunkMs, chunkDelaysMs: delays, firstChunkDelayMs: first });
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end('{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}');
  });
}

export interface HeldStreams {
  readonly open: number;
  close(): void;
}

/**
 * Opens `count` long SSE streams, each on its own connection, `batch` at a time, and resolves once
 * every one has answered 200 and delivered its first chunk. `close()` destroys them all.
 */
export async function holdStreams(
  target: Target,
  count: number,
  batch: number,
  holdS: number,
): Promise<HeldStreams> {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const requests: ReturnType<typeof request>[] = [];
  const openOne = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = request(
        `${target.origin}${target.prefix}/v1/chat/completions?chunks=${holdS}&interval=1000`,
        {
          method: 'POST',
          agent,
          ca: target.ca,
          headers: { ...target.headers, 'content-type': 'application/json' },
        },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(new BenchFailure(`held stream answered ${res.statusCode ?? '?'}`));
            return;
          }
          res.once('data', () => resolve());
          res.on('data', () => undefined);
          res.on('error', () => undefined);
        },
      );
      req.on('error', (err) => reject(err));
      requests.push(req);
      req.end('{"stream":true}');
    });
  const close = (): void => {
    for (const req of requests) req.destroy();
    agent.destroy();
  };
  try {
    for (let i = 0; i < count; i += batch) {
      const n = Math.min(batch, count - i);
      await Promise.all(Array.from({ length: n }, openOne));
    }
  } catch (err) {
    close();
    throw err;
  }
  return { open: count, close };
}
