import { Option, type Command } from 'commander';
import type { Config } from '../config/load.js';

/**
 * `tokenproxy kek …` (DESIGN §8). Registered by main.ts with its own helpers for the settings
 * flags; only `kek migrate --to pkcs11` is built (`kek rotate` is not yet).
 */
export interface KekCommandHooks {
  readonly withSettings: (cmd: Command) => Command;
  readonly configFrom: (opts: Record<string, unknown>) => Config;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: (line: string) => void;
  /** Hands the command's exit code (a promise) back to main. */
  readonly run: (result: Promise<number>) => void;
}

export function registerKekCommands(program: Command, hooks: KekCommandHooks): void {
  const kek = program.command('kek').description('Manage the key-encryption key (KEK)');
  hooks
    .withSettings(
      kek
        .command('migrate')
        .description(
          'Move every data key of a local-KEK store under a KEK in an HSM (run with the server stopped; resumable)',
        )
        .addOption(
          new Option('--to <provider>', 'the KEK provider to move to')
            .choices(['pkcs11'])
            .makeOptionMandatory(),
        )
        .option('--batch-size <n>', 'envelopes rewrapped per batch', '100'),
    )
    .action((opts: Record<string, unknown>) => {
      hooks.run(migrateCommand(opts, hooks));
    });
}

async function migrateCommand(opts: Record<string, unknown>, hooks: KekCommandHooks): Promise<number> {
  // The target's settings are the pkcs11_* ones; `kek` itself stays what the store has now.
  const config = hooks.configFrom({ ...opts, kek: 'pkcs11' });
  const batchSize = Number(opts.batchSize);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    hooks.stdout('tokenproxy: --batch-size must be an integer from 1 to 10000.');
    return 2;
  }
  const [{ openStore }, { openMigration }, { migrateEnvelopes }] = await Promise.all([
    import('../store/open.js'),
    import('../vault/open-kek.js'),
    import('../vault/kek-migrate.js'),
  ]);
  const store = await openStore({ database: config.database, dataDir: config.dataDir });
  try {
    const { from, to } = await openMigration(config, hooks.env, store);
    try {
      const { moved } = await migrateEnvelopes(store, from, to, {
        batchSize,
        onBatch: (n) => hooks.stdout(`moved ${n} envelopes to KEK ${to.vault.kekId}`),
      });
      hooks.stdout(
        `Done: ${moved} envelopes moved from the local KEK ${from.vault.kekId} to the HSM KEK ${to.vault.kekId}; ` +
          `the local KEK is retired. Start the server with kek "pkcs11" and the same pkcs11_* settings; ` +
          `master.key can then be destroyed (old backups of the database become useless with it).`,
      );
      return 0;
    } finally {
      await to.vault.close();
    }
  } finally {
    await store.close();
  }
}
