import { ppp, roundP } from '../report.js';
import { timeStream, type Target } from '../sse.js';
import { difference, summarize } from '../stats.js';
import type { PhaseContext } from './context.js';
import { readFile } from 'node:fs/promises';
import { Agent } from 'node:https';

/** The `streaming` phase (see docs/performance.md). */
export async function streamingPhase(ctx: PhaseContext): Promise<void> {
  const { s, b, tls, tp, token } = ctx;
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
