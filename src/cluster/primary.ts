import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { Counter, Gauge, Registry } from 'prom-client';
import { bootstrapDefaultAccount } from '../accounts/create-account.js';
import { ConfigError } from '../config/config-error.js';
import type { Config } from '../config/load.js';
import { octal, prepareDataDir } from '../server/data-dir.js';
import { acquireServeLock, withBootstrapLock } from './serve-lock.js';
import { checkPortsFree, preflight } from '../server/preflight.js';
import { openStore } from '../store/open.js';
import { createCountryResolver } from '../requestlog/country.js';
import { loadTlsMaterial } from '../tls/tls-material.js';
import { openKek } from '../vault/open-kek.js';
import { isMetricsRequest, isReady, type MetricsReply } from './messages.js';
import { ServiceMetrics } from './service-metrics.js';
import { crashesInARow, restartDelayMs, shouldGiveUp } from './restart-backoff.js';
import { CERTIFICATE_GENERATED_ENV, WORKER_SLOT_ENV } from './worker-env.js';

export interface PrimaryOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly logger: Logger;
  /** Human-facing lines (banner, the first API key). */
  readonly print: (line: string) => void;
}

/** Grace beyond `drain_timeout` before a worker that does not exit after SIGTERM is killed. */
const EXIT_GRACE_MS = 15_000;

/**
 * `serve --workers N` (N > 1): the primary process. It does everything that must happen once
 * before any worker serves (validate the settings, check the ports, take serve.lock, create the TLS
 * certificate, migrate the store, prove the KEK), then forks N workers that share both ports
 * through node:cluster, and only when all of them listen creates the first account and prints the
 * banner: a start that fails anywhere leaves no account behind. It then supervises: a worker that
 * dies is restarted with backoff (src/cluster/restart-backoff.ts); SIGTERM/SIGINT go to every
 * worker, each drains its in-flight requests, and the primary exits once all have. It serves no
 * traffic itself; it answers the workers' GET /metrics with every worker's series gathered.
 * Resolves to the exit code.
 */
export async function runPrimary(config: Config, options: PrimaryOptions): Promise<number> {
  const { logger, print } = options;
  if (config.redis === undefined) {
    throw new ConfigError(
      `setting workers: ${config.workers} workers need setting redis (--redis redis://host:6379 or TOKENPROXY_REDIS): ` +
        'without it each worker would count rate limits and quotas alone, multiplying them. ' +
        'Set redis, or run with --workers 1.',
    );
  }
  await preflight(config, options.env);
  // Its workers open the GeoIP database too; opened here first, a bad one stops the start before
  // the store, the KEK and the certificate are made.
  await createCountryResolver(config);
  await checkPortsFree(config);
  const sqlite = config.database === undefined;
  for (const fix of await prepareDataDir(config.dataDir, { sqlite })) {
    logger.warn(
      { path: fix.path, from: octal(fix.from), to: octal(fix.to) },
      'tightened the permissions of a data file that other users could read',
    );
  }
  // The primary joins the store for all its workers: `workers` above 1 requires `redis`, so the
  // service is a member of a redis cluster, which a process without redis may not serve beside.
  const lock = await acquireServeLock(config, new Date());
  try {
    const given = config.tlsCert !== undefined || config.tlsKey !== undefined;
    // Given certificate files are checked with the other settings, before the store is opened.
    if (!config.insecureHttp && given)
      await loadTlsMaterial({ dataDir: config.dataDir, certFile: config.tlsCert, keyFile: config.tlsKey });
    const store = await openStore({ database: config.database, dataDir: config.dataDir });
    try {
      // Proven (and on a new store created) before any worker starts; the workers prove it again.
      await (await openKek(config, options.env, store, logger)).close();
      // Generated here once, so the workers load it instead of racing to generate one each; and only
      // once the KEK is accepted, so a refused start leaves no certificate behind.
      const generated =
        !config.insecureHttp && !given && (await loadTlsMaterial({ dataDir: config.dataDir })).generated;
      const workerEnv: Record<string, string> = generated ? { [CERTIFICATE_GENERATED_ENV]: '1' } : {};
      return await supervise(config, options, workerEnv, async () => {
        // Under the same lock as a single serve's: primaries (and serves) starting together on an
        // empty store create one `default` account between them.
        const created = await withBootstrapLock(config, () => bootstrapDefaultAccount(store, new Date()));
        if (created) {
          print(
            `Created account "default" (${created.account.id}, plan free). Its API key, shown only this once:`,
          );
          print(`  ${created.apiKey}`);
        }
      });
    } finally {
      await store.close();
    }
  } finally {
    await lock?.release();
  }
}

interface Slot {
  worker: Worker | undefined;
  startedAt: number;
  crashes: number;
  ready: boolean;
  restartTimer: NodeJS.Timeout | undefined;
}

async function supervise(
  config: Config,
  options: PrimaryOptions,
  workerEnv: Readonly<Record<string, string>>,
  bootstrap: () => Promise<void>,
): Promise<number> {
  const { logger, print } = options;
  const registry = new Registry();
  const running = new Gauge({
    name: 'tokenproxy_workers',
    help: 'Worker processes serving now (serve --workers).',
    registers: [registry],
  });
  const restarts = new Counter({
    name: 'tokenproxy_worker_restarts_total',
    help: 'Workers restarted by the primary after they died.',
    registers: [registry],
  });
  const serviceMetrics = new ServiceMetrics();
  const slots: Slot[] = Array.from({ length: config.workers }, () => ({
    worker: undefined,
    startedAt: 0,
    crashes: 0,
    ready: false,
    restartTimer: undefined,
  }));
  const countRunning = (): void => running.set(slots.filter((s) => s.ready).length);

  let phase: 'starting' | 'serving' | 'stopping' = 'starting';
  let exitCode = 0;
  let finish: (code: number) => void = () => undefined;
  const finished = new Promise<number>((resolve) => (finish = resolve));
  let startFailed: (err: Error) => void = () => undefined;
  let allReady: (banner: readonly string[]) => void = () => undefined;
  const started = new Promise<readonly string[]>((resolve, reject) => {
    allReady = resolve;
    startFailed = reject;
  });

  const fork = (slot: Slot, index: number): void => {
    slot.restartTimer = undefined;
    slot.ready = false;
    // Monotonic: a wall clock step must not make a worker's uptime negative (a crash "in a row").
    slot.startedAt = performance.now();
    const worker = cluster.fork({ ...workerEnv, [WORKER_SLOT_ENV]: String(index + 1) });
    slot.worker = worker;
    worker.on('message', (message: unknown) => {
      if (isReady(message)) {
        slot.ready = true;
        countRunning();
        logger.info({ worker: index + 1, pid: worker.process.pid }, 'worker ready');
        if (phase === 'starting' && slots.every((s) => s.ready)) allReady(message.banner);
      } else if (isMetricsRequest(message)) {
        void gather()
          .then(
            (text): MetricsReply => ({ type: 'tokenproxy:metrics-reply', id: message.id, text }),
            (err: unknown): MetricsReply => ({
              type: 'tokenproxy:metrics-reply',
              id: message.id,
              error: err instanceof Error ? err.message : String(err),
            }),
          )
          .then((reply) => worker.isConnected() && worker.send(reply));
      }
    });
    worker.on('exit', (code, signal) => {
      serviceMetrics.retire(worker.id);
      slot.worker = undefined;
      slot.ready = false;
      countRunning();
      if (phase === 'stopping') {
        if (code !== 0) exitCode = 1;
        if (slots.every((s) => s.worker === undefined)) finish(exitCode);
        return;
      }
      if (phase === 'starting') {
        // The worker printed why; a start that half-happened is stopped as a whole.
        startFailed(
          Object.assign(
            new Error(`a worker stopped during start-up (exit code ${String(code)}, signal ${signal})`),
            {
              exitCode: code === 2 ? 2 : 1,
            },
          ),
        );
        return;
      }
      slot.crashes = crashesInARow(slot.crashes, performance.now() - slot.startedAt);
      if (shouldGiveUp(slots.map((s) => s.crashes))) {
        logger.error({ crashes: slot.crashes }, 'every worker keeps dying right after it starts; stopping');
        exitCode = 1;
        stop('crash loop');
        return;
      }
      const delay = restartDelayMs(slot.crashes);
      logger.error(
        {
          worker: index + 1,
          pid: worker.process.pid,
          code,
          signal,
          restart_in_ms: delay,
          crashes_in_a_row: slot.crashes,
        },
        'worker died; restarting it',
      );
      slot.restartTimer = setTimeout(() => {
        restarts.inc();
        fork(slot, index);
      }, delay);
    });
  };

  /** Every worker's series (a replaced one's counts included), plus the primary's. */
  const gather = async (): Promise<string> => {
    const live = slots.flatMap((s) => (s.worker === undefined ? [] : [s.worker]));
    const workers = await serviceMetrics.gather(live);
    return `${workers}\n${await registry.metrics()}`;
  };

  const stop = (reason: string): void => {
    if (phase === 'stopping') return;
    phase = 'stopping';
    logger.info({ reason }, 'shutting down: every worker drains');
    for (const slot of slots) {
      clearTimeout(slot.restartTimer);
      slot.restartTimer = undefined;
    }
    if (slots.every((s) => s.worker === undefined)) {
      finish(exitCode);
      return;
    }
    for (const slot of slots) slot.worker?.process.kill('SIGTERM');
    // A worker stuck past its own drain timeout is ended: the primary must exit.
    setTimeout(() => {
      for (const slot of slots) slot.worker?.process.kill('SIGKILL');
    }, config.drainTimeoutMs + EXIT_GRACE_MS).unref();
  };
  const onSignal = (signal: NodeJS.Signals) => () => stop(signal);
  const onTerm = onSignal('SIGTERM');
  const onInt = onSignal('SIGINT');
  // A closed terminal drains like SIGTERM (Node's default would end the primary at once).
  const onHup = onSignal('SIGHUP');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  process.on('SIGHUP', onHup);

  try {
    slots.forEach((slot, i) => fork(slot, i));
    let banner: readonly string[];
    try {
      banner = await started;
    } catch (err) {
      stop('start-up failed');
      await finished;
      const code = (err as { exitCode?: number }).exitCode ?? 1;
      if (code === 2) throw new ConfigError(`${(err as Error).message}; see its message above`);
      throw err;
    }
    phase = 'serving';
    await bootstrap();
    for (const line of banner) print(line);
    const pids = slots.map((s) => s.worker?.process.pid ?? '?').join(', ');
    print(`  workers         ${config.workers} (pids ${pids}), primary pid ${process.pid}`);
    print(
      `Ready. Stop with Ctrl-C or SIGTERM (in-flight requests get up to ${config.drainTimeoutMs} ms to finish).`,
    );
    const code = await finished;
    logger.info('stopped');
    logger.flush();
    return code;
  } finally {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    process.off('SIGHUP', onHup);
  }
}
