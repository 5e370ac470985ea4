import { Command, CommanderError, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config/load.js';
import { secretsOnCommandLine } from '../config/secret-flags.js';
import { SETTINGS, envName, flagName, type SettingSpec } from '../config/settings.js';
import { registerAccountCommands } from './accounts.js';
import { registerKekCommands } from './kek.js';
import { VERSION } from '../version.js';
import { workerSlot } from '../cluster/worker-env.js';
import { noStoreIn, sqliteStoreIn } from '../server/data-dir.js';

type Out = (line: string) => void;

export interface CliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: Out;
  readonly stderr: Out;
}

const defaultIo: CliIo = {
  env: process.env,
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
};

/** Entry point of `bin/tokenproxy`. Resolves to the exit code. */
export async function main(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  const program = new Command('tokenproxy')
    .description('Credential-protecting proxy for provider APIs')
    .version(VERSION, '-v, --version', 'print the version')
    .helpOption('-h, --help', 'show help (`tokenproxy <command> --help` for its options)')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s.trimEnd()), writeErr: (s) => io.stderr(s.trimEnd()) });

  let result: Promise<number> = Promise.resolve(0);

  withSettings(program.command('serve').description('Run the management API and the proxy')).action(
    (opts: Record<string, unknown>) => {
      result = serve(opts, io);
    },
  );

  withSettings(
    program.command('migrate').description('Apply pending database migrations and exit'),
    STORE_SETTINGS,
  ).action((opts: Record<string, unknown>) => {
    result = migrate(opts, io);
  });

  registerAccountCommands(program, {
    withSettings,
    configFrom: (opts) => configFrom(opts, io),
    env: io.env,
    stdout: io.stdout,
    stderr: io.stderr,
    readSettings: STORE_SETTINGS,
    writeSettings: [...STORE_SETTINGS, ...KEK_SETTINGS],
    run: (promise) => {
      result = promise;
    },
  });

  registerKekCommands(program, {
    withSettings,
    settings: [...STORE_SETTINGS, ...KEK_SETTINGS],
    configFrom: (opts) => configFrom(opts, io),
    env: io.env,
    stdout: io.stdout,
    stderr: io.stderr,
    run: (promise) => {
      result = promise;
    },
  });

  try {
    await program.parseAsync([...argv]);
  } catch (err) {
    // A command line commander refuses (an unknown option, a missing value) is a bad setting like
    // any other: exit 2, as scripts are told. Help and --version end here with 0.
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  try {
    return await result;
  } catch (err) {
    io.stderr(`tokenproxy: ${err instanceof Error ? err.message : String(err)}`);
    return exitCodeOf(err);
  }
}

/**
 * 2 for a bad setting, whichever module found it (every one throws a ConfigError or a subclass:
 * TlsMaterialError, KekError), 1 for any other failure (README, "Commands"). Decided on the class,
 * never on the message.
 */
export function exitCodeOf(err: unknown): 1 | 2 {
  return err instanceof ConfigError ? 2 : 1;
}

/** The settings of commands that only open the store: `--help` lists what the command reads. */
const STORE_SETTINGS: readonly string[] = ['data_dir', 'database'];
/** Commands that write to the store prove the KEK first, so they read its settings too. */
const KEK_SETTINGS: readonly string[] = [
  'kek',
  'pkcs11_module',
  'pkcs11_token_label',
  'pkcs11_pin',
  'pkcs11_key_label',
];

/**
 * Adds one flag per setting the command reads (all of them unless `only` is given) plus `--config`.
 * With `hideOthers`, the other settings are still accepted but left out of `--help`: for commands run
 * with the same flags as `serve` (the kek commands), where refusing them would break those scripts.
 * The default is shown in the help text but not given to commander: a flag default would override
 * the environment and the config file, and precedence lives in loadConfig.
 */
function withSettings(cmd: Command, only?: readonly string[], hideOthers = false): Command {
  cmd.option('--config <file>', 'JSON config file (env TOKENPROXY_CONFIG)');
  for (const spec of SETTINGS as readonly SettingSpec[]) {
    const listed = only === undefined || only.includes(spec.name);
    if (!listed && !hideOthers) continue;
    const flag = spec.kind.type === 'boolean' ? flagName(spec.name) : `${flagName(spec.name)} <value>`;
    const shown =
      spec.default === undefined || spec.secret === true ? '' : `default: ${String(spec.default)}; `;
    const option = new Option(flag, `${spec.description} (${shown}env ${envName(spec.name)})`);
    cmd.addOption(listed ? option : option.hideHelp());
    // A switch turned on by the environment or the config file can be turned off for one run, as
    // "flag over environment over file" promises (unlisted in --help: the README names the form).
    if (spec.kind.type === 'boolean')
      cmd.addOption(new Option(`--no-${flagName(spec.name).slice(2)}`, `turns ${spec.name} off`).hideHelp());
  }
  return cmd;
}

function configFrom(opts: Record<string, unknown>, io: CliIo): Config {
  const flags: Record<string, string | boolean> = {};
  for (const spec of SETTINGS) {
    const value = opts[camel(spec.name)];
    if (typeof value === 'string' || typeof value === 'boolean') flags[spec.name] = value;
  }
  const configFile = typeof opts.config === 'string' ? opts.config : io.env.TOKENPROXY_CONFIG || undefined;
  return loadConfig({ flags, env: io.env, configFile });
}

function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

// Commands load their modules on use: `tokenproxy --help` should not pay for Fastify, Kysely and X.509.

async function serve(opts: Record<string, unknown>, io: CliIo): Promise<number> {
  const config = configFrom(opts, io);
  const tuning = await import('../runtime/v8-tuning.js');
  // Before anything is opened or listened on: the process may be replaced (same pid).
  tuning.restartWithServeFlags(config.workers);
  tuning.applyServeV8Flags();
  const [{ createLogger }, { startServer }] = await Promise.all([
    import('../observability/logger.js'),
    import('../server/start.js'),
  ]);
  const logger = createLogger(config.logLevel);
  // `--workers N` (src/cluster): the primary supervises; the workers, forked from it, serve.
  const { default: cluster } = await import('node:cluster');
  // Once per service: workers are forked with the same command line.
  const exposed = secretsOnCommandLine(config);
  if (exposed.length > 0 && !cluster.isWorker) {
    logger.warn(
      { settings: exposed, instead: exposed.map(envName) },
      'secrets were given as command-line flags, which every user of this machine can read in the process list: give them as environment variables instead',
    );
  }
  if (cluster.isWorker)
    return (await import('../cluster/worker.js')).runWorker(
      config,
      logger.child({ worker: workerSlot(io.env) ?? cluster.worker?.id, pid: process.pid }),
    );
  if (config.workers > 1)
    return (await import('../cluster/primary.js')).runPrimary(config, {
      env: io.env,
      logger,
      print: io.stderr,
    });
  const server = await startServer(config, { env: io.env, logger, print: io.stderr });
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'shutting down');
      server.close().then(
        () => {
          logger.info('stopped');
          logger.flush();
          resolve(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    // The terminal or ssh session of a foreground `npm start` closing: Node's default would end the
    // process at once, dropping the requests in flight and the request-log records not yet stored.
    process.once('SIGHUP', () => stop('SIGHUP'));
    // Printed only once the signal handlers are in place, so "Ready." means a SIGTERM drains.
    io.stderr(
      `Ready. Stop with Ctrl-C or SIGTERM (in-flight requests get up to ${config.drainTimeoutMs} ms to finish).`,
    );
  });
}

async function migrate(opts: Record<string, unknown>, io: CliIo): Promise<number> {
  const config = configFrom(opts, io);
  // A SQLite store is made by `serve` (or `accounts create`); here a mistyped --data-dir would make
  // an empty one and report it "migrated". A PostgreSQL database may be prepared before the first start.
  if (config.database === undefined && !(await sqliteStoreIn(config.dataDir))) {
    io.stderr(`tokenproxy: migrate found ${noStoreIn(config.dataDir)}. Nothing was created.`);
    return 2;
  }
  const { openStoreWithoutMigrating } = await import('../store/open.js');
  const store = await openStoreWithoutMigrating({ database: config.database, dataDir: config.dataDir });
  try {
    const applied = await store.migrateToLatest();
    io.stdout(applied.length === 0 ? 'Database is up to date.' : `Applied: ${applied.join(', ')}`);
    return 0;
  } finally {
    await store.close();
  }
}
