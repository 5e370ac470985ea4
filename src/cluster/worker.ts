import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Config } from '../config/load.js';
import { startServer } from '../server/start.js';
import {
  isMetricsReply,
  isSeriesRequest,
  type MetricsRequest,
  type ReadyMessage,
  type SeriesReply,
} from './messages.js';
import { certificateGeneratedByPrimary } from './worker-env.js';

const METRICS_TIMEOUT_MS = 10_000;

/**
 * GET /metrics in a worker: the primary gathers every worker's registry over the cluster channel
 * (src/cluster/service-metrics.ts) and answers with one text for the whole service,
 * so one scrape of either port's management listener sees everything, whichever worker it reaches.
 */
class ServiceRegistry extends Registry {
  #next = 0;
  readonly #waiting = new Map<number, { resolve: (text: string) => void; reject: (err: Error) => void }>();

  constructor() {
    super();
    process.on('message', (message: unknown) => {
      if (!isMetricsReply(message)) return;
      const waiter = this.#waiting.get(message.id);
      this.#waiting.delete(message.id);
      if (message.text !== undefined) waiter?.resolve(message.text);
      else
        waiter?.reject(
          new Error(`the primary could not gather the workers' metrics: ${message.error ?? ''}`),
        );
    });
  }

  override metrics(): Promise<string> {
    const id = this.#next++;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        reject(new Error('the primary did not answer with the metrics in time'));
      }, METRICS_TIMEOUT_MS);
      this.#waiting.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (err) => (clearTimeout(timer), reject(err)),
      });
      const request: MetricsRequest = { type: 'tokenproxy:metrics', id };
      process.send?.(request);
    });
  }
}

/**
 * One worker of `serve --workers N`: the ordinary server (the primary has already validated the
 * configuration, migrated the store and proven the KEK), without serve.lock and the first account
 * (the primary's), listening on ports node:cluster shares between the workers. Drains on SIGTERM,
 * SIGINT, SIGHUP, or when the primary goes away, and resolves to the exit code.
 */
export async function runWorker(config: Config, logger: Logger): Promise<number> {
  // Answers the primary's gatherings from the start: a worker still starting answers with no
  // series instead of holding every scrape up until the primary's timeout.
  let own: Registry | undefined;
  process.on('message', (message: unknown) => {
    if (!isSeriesRequest(message)) return;
    void (own?.getMetricsAsJSON() ?? Promise.resolve([])).then((series) => {
      const reply: SeriesReply = { type: 'tokenproxy:series-reply', id: message.id, series };
      if (process.connected) process.send?.(reply);
    });
  });
  const banner: string[] = [];
  const server = await startServer(config, {
    env: process.env,
    logger,
    print: (line) => banner.push(line),
    worker: {
      certificateGenerated: certificateGeneratedByPrimary(process.env),
      metrics(local) {
        // Answer the primary's gathering with this worker's own series.
        own = local;
        return new ServiceRegistry();
      },
    },
  });
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (reason: string): void => {
      if (stopping) return;
      stopping = true;
      logger.info({ reason }, 'worker draining');
      server.close().then(
        () => {
          logger.info('worker stopped');
          logger.flush();
          // The channel to the primary would keep this process alive; closing it lets it exit.
          if (process.connected) process.disconnect();
          resolve(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'worker shutdown failed');
          if (process.connected) process.disconnect();
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    // A closed terminal sends SIGHUP to the whole process group, workers included: they drain too.
    process.on('SIGHUP', () => stop('SIGHUP'));
    // The primary died (kill -9): nobody would stop this worker, and it would hold the ports.
    process.on('disconnect', () => stop('primary gone'));
    logger.info('worker listening');
    const ready: ReadyMessage = { type: 'tokenproxy:ready', banner };
    process.send?.(ready);
  });
}
