/**
 * Diagnosis, never part of a reported run: where a process's main thread loses its milliseconds.
 * Load it into the systems under test (Linux only):
 *
 *   BENCH_PROXY_NODE_ARGS="--import ./dist-bench/bench/stall-probe.js" \
 *   BENCH_REFERENCE_NODE_ARGS="--import ./dist-bench/bench/stall-probe.js" npm run bench -- --only steady
 *
 * Every 5 ms the main thread ticks; a tick more than 8 ms late is written down with how long this
 * thread ran and waited for a CPU meanwhile (its /proc/self/task/<pid>/schedstat), which other threads ran
 * (V8's helpers, the log worker…) and the collections it overlapped. Once a second: each thread's run
 * time, the heap spaces over 1 MB, RSS and the collections by kind. JSON lines in
 * $STALL_PROBE_DIR (default the temp dir): `<pid>-<script>.gaps.jsonl` and `.seconds.jsonl`.
 * Reading /proc 200 times a second costs the process; that is why it is never loaded by default.
 */
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { isMainThread } from 'node:worker_threads';
import { round } from './stats.js';
import { overlapping, parseSchedstat, runByName, type GcEntry, type Schedstat } from './stall-rules.js';

const TICK_MS = 5;
const LATE_MS = 8;
const KEEP_GCS = 200;

function start(): void {
  const out = join(
    process.env.STALL_PROBE_DIR ?? tmpdir(),
    `${process.pid}-${basename(process.argv[1] ?? 'node')}`,
  );
  const self = String(process.pid); // the main thread's id is the process id
  // The per-second lines name it; listThreads never renames a thread it knows.
  const names = new Map<string, string>([[self, 'main']]);
  let tids: string[] = [];
  const listThreads = (): void => {
    tids = readdirSync('/proc/self/task');
    for (const tid of tids) {
      if (names.has(tid)) continue;
      try {
        names.set(tid, readFileSync(`/proc/self/task/${tid}/comm`, 'latin1').trim());
      } catch {
        // ended meanwhile
      }
    }
  };
  /** Every thread's schedstat, this one's included (its run and run-queue time for the gaps). */
  const readThreads = (): Map<string, Schedstat> => {
    const stats = new Map<string, Schedstat>();
    for (const tid of tids) {
      try {
        const stat = parseSchedstat(readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1'));
        if (stat !== undefined) stats.set(tid, stat);
      } catch {
        // ended meanwhile
      }
    }
    return stats;
  };

  const gcs: GcEntry[] = [];
  let perSecond = new Map<number, [number, number]>();
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0;
      gcs.push({ start: e.startTime, duration: e.duration, kind });
      if (gcs.length > KEEP_GCS) gcs.splice(0, KEEP_GCS / 2);
      const [count, ms] = perSecond.get(kind) ?? [0, 0];
      perSecond.set(kind, [count + 1, ms + e.duration]);
    }
  }).observe({ entryTypes: ['gc'] });

  listThreads();
  let last = performance.now();
  let lastThreads = readThreads();
  let ticks = 0;
  setInterval(() => {
    const now = performance.now();
    if (++ticks % 200 === 0) listThreads();
    const threads = readThreads();
    const mine = threads.get(self);
    const lastMine = lastThreads.get(self);
    if (now - last > TICK_MS + LATE_MS && mine !== undefined && lastMine !== undefined) {
      const gap = {
        wall: Date.now(),
        gapMs: round(now - last, 2),
        ranMs: round((mine.runNs - lastMine.runNs) / 1e6, 2),
        waitedMs: round((mine.waitNs - lastMine.waitNs) / 1e6, 2),
        slices: mine.slices - lastMine.slices,
        others: runByName(lastThreads, threads, names, self, 0.05),
        gcs: overlapping(gcs, last, now),
      };
      appendFileSync(`${out}.gaps.jsonl`, `${JSON.stringify(gap)}\n`);
    }
    last = now;
    lastThreads = threads;
  }, TICK_MS).unref();

  let secondThreads = readThreads();
  setInterval(() => {
    const now = readThreads();
    const threads = runByName(secondThreads, now, names, '', 0.5);
    secondThreads = now;
    const heapMb: Record<string, number> = {};
    for (const space of getHeapSpaceStatistics())
      if (space.space_used_size > 1e6) heapMb[space.space_name] = round(space.space_used_size / 1e6, 1);
    const collections = Object.fromEntries(
      [...perSecond].map(([kind, [count, ms]]) => [kind, { count, ms: round(ms, 1) }]),
    );
    perSecond = new Map();
    const second = {
      wall: Date.now(),
      rssMb: Math.round(process.memoryUsage.rss() / 1e6),
      threads,
      heapMb,
      collections,
    };
    appendFileSync(`${out}.seconds.jsonl`, `${JSON.stringify(second)}\n`);
  }, 1000).unref();
}

if (isMainThread) start();
