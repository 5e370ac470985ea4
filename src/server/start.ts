import { watchSchema } from '../store/schema-watch.js';
import { injectedClock, startSharedClock } from '../cluster/shared-clock.js';
import { rmdir } from 'node:fs/promises';
import { errorSummary } from '../errors/summary.js';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { bootstrapDefaultAccount } from '../accounts/create-account.js';
import { buildApiApp } from '../api/app.js';
import { publicUrl, type Config } from '../config/load.js';
import { ProviderRegistry } from '../providers/providers.js';
import type { EventPublisher } from '../events/publisher.js';
import { startEvents, type RunningEvents } from '../events/start-events.js';
import { createLimits } from '../limits/index.js';
import { createUsage } from '../usage/create-usage.js';
import { createMetrics } from '../observability/metrics.js';
import { createCountryResolver } from '../requestlog/country.js';
import type { LogBudgets } from '../requestlog/log-budgets.js';
import { startLogWorker } from '../requestlog/log-worker.js';
import { createProxyServer } from '../proxy/server.js';
import { logReduction, startIdleMemoryReducer } from '../runtime/idle-memory.js';
import { openStoreWithoutMigrating } from '../store/open.js';
import type { Store } from '../store/store.js';
import { loadTlsMaterial } from '../tls/tls-material.js';
import { KekError } from '../vault/kek-error.js';
import { openKek } from '../vault/open-kek.js';
import { octal, pathExists, prepareDataDir } from './data-dir.js';
import { acquireServeLock, withBootstrapLock } from '../cluster/serve-lock.js';
import { startCluster } from '../cluster/start-cluster.js';
import { redactRedisUrl } from '../cluster/redis-url.js';
import { bindError, checkPortsFree, preflight } from './preflight.js';
import { VERSION } from '../version.js';
import { startRetentionWorker, type RetentionWorker } from '../retention/retention-worker.js';
import { compileIpMatcher } from '../rules/ip-match.js';

export interface RunningServer {
  readonly apiUrl: string;
  readonly proxyUrl: string;
  /** Actual bound ports (differ from the config when it asked for port 0). */
  readonly apiPort: number;
  readonly proxyPort: number;
  readonly fingerprint: string | undefined;
  readonly publicApiUrl: string;
  readonly publicProxyUrl: string;
  readonly store: Store;
  /** The events subsystem: `events.publisher` records events in the outbox. */
  readonly events: RunningEvents;
  /** Deletes history past `log_retention` / `rollup_retention`, on its own thread. */
  readonly retention: RetentionWorker;
  /** Stops accepting, lets in-flight requests finish up to the drain timeout, closes the store. */
  close(): Promise<void>;
}

export interface StartOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly logger: Logger;
  /** Human-facing lines (banner, the first API key). Not the JSON log. */
  readonly print: (line: string) => void;
  /** A test's clock, used instead of the shared one (src/cluster/shared-clock.ts). */
  readonly now?: () => Date;
  /** Smaller log-queue budgets than LOG_BUDGETS, for tests of floods that must overflow them. */
  readonly logBudgets?: Partial<LogBudgets> | undefined;
  /**
   * Set in a `--workers` worker (src/cluster/worker.ts): the primary holds serve.lock and creates
   * the first account, and GET /metrics serves the registry `metrics` returns (the whole service's).
   */
  readonly worker?:
    | {
        readonly metrics: (local: Registry) => Registry;
        /** The primary generated the certificate this worker loads (the banner says so). */
        readonly certificateGenerated: boolean;
      }
    | undefined;
}

export async function startServer(config: Config, options: StartOptions): Promise<RunningServer> {
  const { logger } = options;
  const now = options.now ?? (() => new Date());
  // DESIGN §13's order: validate → open the store and check the KEK → bind both ports → only then
  // create the first account and print its key. Whatever fails stops the start before that last
  // step, so a failed start never leaves an account (and a printed key) behind.
  await preflight(config, options.env);
  // A worker's ports are the primary's (node:cluster), which tried them before it forked.
  if (!options.worker) await checkPortsFree(config);
  const sqlite = config.database === undefined;
  const dirExisted = await pathExists(config.dataDir);
  for (const fix of await prepareDataDir(config.dataDir, { sqlite })) {
    logger.warn(
      { path: fix.path, from: octal(fix.from), to: octal(fix.to) },
      'tightened the permissions of a data file that other users could read',
    );
  }
  const started: Array<() => Promise<void> | void> = [];
  const stopStarted = async (): Promise<void> => {
    for (const stop of started.reverse()) await stop();
  };

  try {
    // Workers are exempt: the primary holds the lock for the whole service.
    const lock = options.worker ? undefined : await acquireServeLock(config, now());
    started.push(() => lock?.release());
    return await startLocked(config, options, started, stopStarted);
  } catch (err) {
    // Everything started so far is stopped (the log worker's thread would keep the process alive).
    await stopStarted();
    // A data dir this start made and left empty (an unreachable database, a bad TLS file) goes too;
    // rmdir leaves one that has files.
    if (!dirExisted) await rmdir(config.dataDir).catch(() => undefined);
    throw err;
  }
}

async function startLocked(
  config: Config,
  options: StartOptions,
  started: Array<() => Promise<void> | void>,
  stopStarted: () => Promise<void>,
): Promise<RunningServer> {
  const { logger, print } = options;
  /** When a stop began plus the drain timeout: what is stopped after the listeners shares what is left. */
  let drainDeadline: number | undefined;

  // Given certificate files are read (and refused) first, with the other settings; a certificate of
  // our own is generated only once the store has accepted the KEK: a refused start writes nothing.
  const given = config.tlsCert !== undefined || config.tlsKey !== undefined;
  const tlsGiven =
    config.insecureHttp || !given
      ? undefined
      : await loadTlsMaterial({ dataDir: config.dataDir, certFile: config.tlsCert, keyFile: config.tlsKey });
  if (config.insecureHttp) {
    logger.warn(
      'insecure_http is on: both listeners serve plain HTTP. Use this only behind a load balancer that terminates TLS 1.3.',
    );
  }

  // Opened before the store: a GeoIP database that does not open must not leave a new data dir's
  // store behind. (The primary of --workers checks it the same way before its workers start.)
  const countryOf = await createCountryResolver(config);
  const store = await openStoreWithoutMigrating({
    database: config.database,
    dataDir: config.dataDir,
    warn: (message, err) => logger.warn({ err: errorSummary(err) }, message),
    watchFile: ({ level, path, message }) => logger[level]({ file: path }, message),
  });
  started.push(() => store.close());
  const upgraded = await store.migrateToLatest();
  if (upgraded.length > 0) logger.info({ migrations: upgraded }, 'store schema upgraded');
  // The KEK is proven against the store before anything else starts: a wrong one never writes.
  const vault = await openKek(config, options.env, store, logger).catch((err: unknown) => {
    // The KEK is checked on the current schema, so an upgrade comes first: say so, rather than let
    // "nothing was written" stand for a store an older tokenproxy no longer opens.
    if (err instanceof KekError && upgraded.length > 0) {
      throw new KekError(
        err.setting,
        `${err.message} (Before that, this start upgraded the store's schema with ${upgraded.length} migration(s), ` +
          `${upgraded.at(-1) ?? ''} the last: a tokenproxy older than this one no longer opens it.)`,
        { cause: err },
      );
    }
    throw err;
  });
  started.push(() => vault.close());
  const tls =
    tlsGiven ?? (config.insecureHttp ? undefined : await loadTlsMaterial({ dataDir: config.dataDir }));
  let publicProxyUrl = '';
  const providers = new ProviderRegistry(config.providers);
  const metrics = createMetrics({ providers: providers.ids() });
  // One clock for every member of a cluster: the database's (src/cluster/shared-clock.ts). A test's
  // injected clock stands in for it.
  const clock =
    options.now === undefined
      ? await startSharedClock({ store, logger, registry: metrics.registry })
      : injectedClock(options.now);
  started.push(() => clock.close());
  const now = clock.now;
  // Redis (src/cluster): shared counters and the invalidation bus; absent without `redis`.
  const cluster = await startCluster(config, logger, metrics.registry);
  started.push(() => cluster.close());
  // Records and anomalies are stored in batches by a worker thread with its own store connection,
  // so no database work runs on the proxy's event loop (and they are flushed at shutdown).
  const logWorker = startLogWorker({
    database: config.database,
    dataDir: config.dataDir,
    logger,
    metrics,
    stdout: config.logRequests ? (line) => void process.stdout.write(line) : undefined,
    budgets: options.logBudgets,
  });
  started.push(() => logWorker.close());
  const policy = { logs: config.logRetention, rollups: config.rollupRetention };
  const retention = startRetentionWorker(
    { database: config.database, dataDir: config.dataDir, policy },
    logger,
  );
  started.push(() => retention.close());
  const { requestLog, anomalies } = logWorker;
  // Events (src/events): the durable outbox, its delivery worker (webhooks, e-mail) and the expiry
  // sweeper. The public addresses are read lazily: they are known only once the listeners are bound.
  let dashboardBase = config.publicApiUrl;
  const events = startEvents({
    store,
    vault,
    config,
    logger,
    now,
    links: {
      publicProxyUrl: () => publicProxyUrl,
      dashboardUrl: () => `${dashboardBase ?? ''}/`,
    },
  });
  // Deliveries in flight get what is left of the drain timeout, so a hanging receiver never holds a
  // stopping server past it (DESIGN §10).
  started.push(() =>
    events.close(
      Math.max(0, (drainDeadline ?? performance.now() + config.drainTimeoutMs) - performance.now()),
    ),
  );
  // Limits (src/limits): IP backoff, rate limits, quotas, breach alerts, anomaly detection.
  const limitsPublisher: EventPublisher = events.publisher;
  const limits = createLimits({
    config,
    store,
    anomalies,
    publisher: limitsPublisher,
    logger,
    now: clock.nowMs,
    counters: cluster.counters,
  });
  started.push(() => limits.close());
  // Closed before the limits (the list runs backwards): their last breach alerts must not wait on
  // events held for a store that refuses writes.
  started.push(() => events.stopHolding());
  cluster.onCountersSwitched(() => limits.proxy.forgetAccounts());

  // The proxy binds first: with port 0 its real port is needed for `proxy_base_url`.
  const proxy = createProxyServer(
    {
      store,
      vault,
      providers,
      config,
      requestLog,
      onUnauthorized: limits.breach.onUnauthorized,
      limits: limits.proxy,
      usage: createUsage({ config, store, counters: limits.counters, publisher: limitsPublisher, logger }),
      metrics,
      countryOf,
      logger,
      now: clock.nowMs,
    },
    { tls: tls ? { key: tls.key, cert: tls.cert } : undefined },
  );
  const invalidation = cluster.invalidation((scope) => {
    if (scope !== 'accounts') proxy.invalidateCredentials();
    if (scope !== 'tokens') limits.proxy.forgetAccounts();
  });
  // Before the listeners' part of the list: a stop closes it with the store.
  const schema = watchSchema(store, logger);
  started.push(() => schema.close());
  const reducer = startIdleMemoryReducer(() => proxy.requests(), {
    busy: () => proxy.inFlight() > 0,
    onReduced: logReduction(logger, 'proxy'),
  });
  started.push(() => reducer.stop());
  // What follows is closed by the drain in close(); everything before it by stopStarted.
  const beforeListeners = started.length;
  started.push(() => proxy.close(0));
  const proxyPortBound = await proxy
    .listen(config.host, config.proxyPort)
    .catch((err: unknown) => Promise.reject(bindError(err, 'proxy_port', config.host, config.proxyPort)));
  publicProxyUrl = config.publicProxyUrl ?? publicUrl(config.host, proxyPortBound, config.insecureHttp);

  const api = await buildApiApp(
    {
      store,
      newerSchema: schema.check,
      vault,
      providers,
      publicProxyUrl,
      now,
      plans: config.plans,
      onCredentialsChanged: () => invalidation.invalidate('tokens'),
      onEventsCommitted: () => events.nudge(),
      allowPrivateWebhooks: config.allowPrivateWebhooks,
      publicApiUrl: config.publicApiUrl,
      degraded: () => cluster.degraded(),
      counters: limits.counters,
      trustProxy: config.trustProxy.length === 0 ? null : compileIpMatcher(config.trustProxy),
      retention: { logs: config.logRetention.text, rollups: config.rollupRetention.text },
    },
    {
      logger,
      https: tls ? { key: tls.key, cert: tls.cert } : undefined,
      version: VERSION,
      metricsRegistry: options.worker?.metrics(metrics.registry) ?? metrics.registry,
      connections: config.connections,
    },
  );
  started.push(() => api.close());
  await api
    .listen({ host: config.host, port: config.apiPort })
    .catch((err: unknown) => Promise.reject(bindError(err, 'api_port', config.host, config.apiPort)));

  // Both ports are ours: only now can the first account be created without a failed start leaving
  // an account, and a printed key, behind.
  const created =
    options.worker || (await store.accounts.count()) > 0
      ? undefined
      : await withBootstrapLock(config, () => bootstrapDefaultAccount(store, now()));
  if (created) {
    print(`Created account "default" (${created.account.id}, plan free). Its API key, shown only this once:`);
    print(`  ${created.apiKey}`);
  }

  const apiPort = (api.server.address() as AddressInfo).port;
  const proxyPort = (proxy.server.address() as AddressInfo).port;
  const scheme = tls ? 'https' : 'http';
  const apiUrl = `${scheme}://${urlHost(config.host)}:${apiPort}`;
  const proxyUrl = `${scheme}://${urlHost(config.host)}:${proxyPort}`;
  const publicApiUrl = config.publicApiUrl ?? publicUrl(config.host, apiPort, config.insecureHttp);
  dashboardBase = publicApiUrl;
  print(`tokenproxy ${VERSION}`);
  print(`  management API  ${apiUrl}/v1   (public: ${publicApiUrl}/v1)`);
  print(`  proxy           ${proxyUrl}   (public: ${publicProxyUrl})`);
  print(`  store           ${store.dialect === 'sqlite' ? `SQLite in ${config.dataDir}` : 'PostgreSQL'}`);
  if (config.redis !== undefined) print(`  redis           ${redactRedisUrl(config.redis)} (shared limits)`);
  if (tls) {
    const generated = tls.generated || options.worker?.certificateGenerated === true;
    print(`  TLS 1.3 certificate ${generated ? 'generated' : 'loaded'}: ${tls.certPath}`);
    print(`  SHA-256 fingerprint: ${tls.fingerprint}`);
  }
  print(
    `  e-mail alerts   ${events.emailEnabled ? 'on' : 'off (set smtp_url to send breach alerts by e-mail)'}`,
  );
  logger.info({ apiPort, proxyPort, dialect: store.dialect }, 'listening');

  let closing: Promise<void> | undefined;
  return {
    apiUrl,
    proxyUrl,
    apiPort,
    proxyPort,
    fingerprint: tls?.fingerprint,
    publicApiUrl,
    publicProxyUrl,
    store,
    events,
    retention,
    close() {
      closing ??= (async () => {
        // Monotonic: a wall clock stepped back while stopping must not stretch the drain by the step.
        drainDeadline = performance.now() + config.drainTimeoutMs;
        const drained = Promise.all([api.close(), proxy.close(config.drainTimeoutMs)]);
        const timer = setTimeout(() => {
          logger.warn(
            { drain_timeout_ms: config.drainTimeoutMs },
            'drain timeout reached; closing open connections',
          );
          api.server.closeAllConnections();
        }, config.drainTimeoutMs);
        try {
          await drained;
        } finally {
          clearTimeout(timer);
          // The listeners are closed: nothing writes records any more, so flushing now loses none.
          started.length = beforeListeners;
          await stopStarted();
        }
      })();
      return closing;
    },
  };
}

function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
