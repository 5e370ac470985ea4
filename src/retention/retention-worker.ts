import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { errorSummary } from '../errors/summary.js';
import { relog } from '../requestlog/log-worker.js';
import type { PurgeReport } from './purge.js';
import type { FromRetentionThread, RetentionThreadData, ToRetentionThread } from './retention-protocol.js';

export interface RetentionWorker {
  /** One retention pass now, on the thread (tests, benchmarks); null when another process ran it. */
  runNow(): Promise<PurgeReport | null>;
  /** Stops at the next batch and closes the thread's store connection. */
  close(): Promise<void>;
}

/** Starts retention on its own thread (see retention-thread.ts). */
export function startRetentionWorker(data: RetentionThreadData, logger: Logger): RetentionWorker {
  const worker = new Worker(threadFile(), {
    workerData: data,
    resourceLimits: { maxOldGenerationSizeMb: 64 },
  });
  const waiting = new Map<number, { resolve: (r: PurgeReport | null) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      exited = true;
      for (const w of waiting.values()) w.reject(new Error('retention thread stopped'));
      waiting.clear();
      resolve();
    }),
  );
  worker.on('error', (err) => logger.error({ err: errorSummary(err) }, 'retention thread failed'));
  worker.on('message', (message: FromRetentionThread) => {
    if (message.t === 'log') relog(logger, message.line);
    else if (message.t === 'ran') {
      const w = waiting.get(message.id);
      waiting.delete(message.id);
      if (message.error !== undefined) w?.reject(new Error(message.error));
      else w?.resolve(message.report ?? null);
    }
  });
  worker.unref();
  const post = (message: ToRetentionThread): void => worker.postMessage(message);

  let closing: Promise<void> | undefined;
  return {
    runNow() {
      if (exited) return Promise.reject(new Error('retention thread stopped'));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        post({ t: 'run', id });
      });
    },
    close() {
      closing ??= (async () => {
        if (exited) return;
        post({ t: 'close' });
        // A thread stuck in a long statement is stopped rather than waited on forever.
        const timer = setTimeout(() => void worker.terminate(), 10_000);
        await exit;
        clearTimeout(timer);
      })();
      return closing;
    },
  };
}

/** The compiled thread beside this module, or the one `npm run build` put in dist/ (tests run sources). */
function threadFile(): URL {
  const beside = new URL('./retention-thread.js', import.meta.url);
  if (existsSync(beside)) return beside;
  const built = new URL('../../dist/retention/retention-thread.js', import.meta.url);
  if (existsSync(built)) return built;
  throw new Error('retention: dist/retention/retention-thread.js is missing; run `npm run build`');
}
