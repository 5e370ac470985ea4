import type { Reference } from '../load/types.js';
import { fmt } from '../report.js';
import { holdStreams, type Target } from '../sse.js';
import { round } from '../stats.js';
import { log, sleep, rssMb } from '../util.js';
import type { PhaseContext } from './context.js';
import { readFile } from 'node:fs/promises';

/** The `memory` phase (see docs/performance.md). */
export async function memoryPhase(ctx: PhaseContext): Promise<void> {
  const { s, b, tls, forwarderRef, relayRef, tp, token, rssIdleStart } = ctx;
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
  b.row('proxy RSS idle (at start / before streams)', '', `${fmt(rssIdleStart)} / ${fmt(idle)}`, '', 'MB');
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
