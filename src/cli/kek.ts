import { Option, type Command } from 'commander';
import type { Config } from '../config/load.js';

/**
 * `tokenproxy kek …` (DESIGN §8): `kek rotate` and `kek migrate --to pkcs11`. Registered by main.ts
 * with its own helpers for the settings flags.
 */
export interface KekCommandHooks {
  readonly withSettings: (cmd: Command, only?: readonly string[], hideOthers?: boolean) => Command;
  /**
   * The settings the kek commands read (the store's and the KEK's), listed in `--help`; the others
   * are accepted unlisted, so the command runs with the same flags as `serve`.
   */
  readonly settings: readonly string[];
  readonly configFrom: (opts: Record<string, unknown>) => Config;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: (line: string) => void;
  /** Refusals go here, as every command's do. */
  readonly stderr: (line: string) => void;
  /** Hands the command's exit code (a promise) back to main. */
  readonly run: (result: Promise<number>) => void;
}

export function registerKekCommands(program: Command, hooks: KekCommandHooks): void {
  const kek = program.command('kek').description('Manage the key-encryption key (KEK)');
  hooks
    .withSettings(
      kek
        .command('rotate')
        .description(
          'Make a new KEK version (master.next.key, or "<pkcs11_key_label>.next" in the HSM), rewrap every data key ' +
            'under it in batches while servers keep running, then retire and destroy the old version. ' +
            'Resumable: a run that was stopped is finished by running it again.',
        )
        .option('--batch-size <n>', 'envelopes rewrapped per batch', '100'),
      hooks.settings,
      true,
    )
    .action((opts: Record<string, unknown>) => {
      hooks.run(rotateCommand(opts, hooks));
    });
  hooks
    .withSettings(
      kek
        .command('migrate')
        .description(
          'Move every data key of a local-KEK store under a KEK in an HSM (resumable; servers may keep running if they were given the pkcs11 settings)',
        )
        .addOption(
          new Option('--to <provider>', 'the KEK provider to move to')
            .choices(['pkcs11'])
            .makeOptionMandatory(),
        )
        .option('--batch-size <n>', 'envelopes rewrapped per batch', '100'),
      hooks.settings,
      true,
    )
    .action((opts: Record<string, unknown>) => {
      hooks.run(migrateCommand(opts, hooks));
    });
}

function batchSizeOf(opts: Record<string, unknown>, hooks: KekCommandHooks): number | undefined {
  const batchSize = Number(opts.batchSize);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    hooks.stderr('tokenproxy: --batch-size must be an integer from 1 to 10000.');
    return undefined;
  }
  return batchSize;
}

async function rotateCommand(opts: Record<string, unknown>, hooks: KekCommandHooks): Promise<number> {
  const config = hooks.configFrom(opts);
  const batchSize = batchSizeOf(opts, hooks);
  if (batchSize === undefined) return 2;
  const [{ openStore }, { openKekVersions }, { rotateKek }, { refuseBeforeStore, refuseEnvironmentKey }] =
    await Promise.all([
      import('../store/open.js'),
      import('../vault/open-kek.js'),
      import('../vault/kek-rotate.js'),
      import('../vault/rotate-preflight.js'),
    ]);
  // Before the store is opened: opening would create one on a mistyped --data-dir.
  await refuseBeforeStore(config, hooks.env);
  const store = await openStore({ database: config.database, dataDir: config.dataDir });
  try {
    // A local KEK given in the environment cannot be rotated at all (once proven to be the store's).
    await refuseEnvironmentKey(config, hooks.env, store);
    const opened = await openKekVersions(config, hooks.env, store);
    try {
      const result = await rotateKek(store, opened, {
        batchSize,
        onBatch: (n) => hooks.stdout(`rewrapped ${n} envelopes under KEK ${opened.keyring.kekId}`),
      });
      hooks.stdout(
        `Done: ${result.moved} envelopes rewrapped from KEK ${result.from.join(', ') || '(none left)'} to KEK ${result.to}` +
          `${result.resumed ? ' (an interrupted rotation finished)' : ''}; the old version is retired and destroyed ` +
          `(${config.kek === 'pkcs11' ? `the HSM key now labelled "${config.pkcs11?.keyLabel ?? ''}"` : 'master.key now holds the new key'}). ` +
          `Backups of the database made before this rotation can no longer be decrypted with the new KEK.`,
      );
      return 0;
    } finally {
      await opened.keyring.close();
    }
  } finally {
    await store.close();
  }
}

async function migrateCommand(opts: Record<string, unknown>, hooks: KekCommandHooks): Promise<number> {
  // The target's settings are the pkcs11_* ones; `kek` itself stays what the store has now.
  const config = hooks.configFrom({ ...opts, kek: 'pkcs11' });
  const batchSize = batchSizeOf(opts, hooks);
  if (batchSize === undefined) return 2;
  const [{ openStore }, { openMigration }, { migrateEnvelopes }, { refuseBeforeStore }] = await Promise.all([
    import('../store/open.js'),
    import('../vault/open-kek.js'),
    import('../vault/kek-migrate.js'),
    import('../vault/rotate-preflight.js'),
  ]);
  // Before the store is opened: opening would create one on a mistyped --data-dir.
  await refuseBeforeStore(config, hooks.env, 'kek migrate');
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
