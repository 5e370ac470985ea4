import type { Command } from 'commander';
import type { Config } from '../config/load.js';
import type { AccountRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { noStoreIn, sqliteStoreIn } from '../server/data-dir.js';

/**
 * What the `accounts …` commands share (src/cli/accounts.ts, accounts-delete.ts): the hooks main
 * gives them, finding an account by id or name, and opening the store with the CLI's audit writer.
 */
export interface AccountCommandHooks {
  readonly withSettings: (cmd: Command, only?: readonly string[]) => Command;
  readonly configFrom: (opts: Record<string, unknown>) => Config;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: (line: string) => void;
  readonly stderr: (line: string) => void;
  /** Hands the command's exit code (a promise) back to main. */
  readonly run: (result: Promise<number>) => void;
  /** Settings of commands that only read the store, and of those that also write (prove the KEK). */
  readonly readSettings: readonly string[];
  readonly writeSettings: readonly string[];
}

/**
 * A user's mistake on the command line: printed as is, exit code 2. `confirmation_required`: a
 * destructive command (`accounts delete`) run without its confirmation; nothing was changed.
 */
export class UsageError extends Error {
  readonly code: 'invalid_usage' | 'confirmation_required';
  constructor(message: string, code: 'invalid_usage' | 'confirmation_required' = 'invalid_usage') {
    super(message);
    this.name = 'UsageError';
    this.code = code;
  }
}

export async function findAccount(store: Store, ref: string): Promise<AccountRecord> {
  const byId = await store.accounts.get(ref);
  if (byId !== undefined) return byId;
  const byName = (await store.accounts.listAll()).filter((a) => a.name === ref);
  const [only] = byName;
  if (only !== undefined && byName.length === 1) return only;
  if (byName.length > 1) {
    throw new UsageError(
      `${byName.length} accounts are named "${ref}": give the id instead (${byName.map((a) => a.id).join(', ')}).`,
    );
  }
  throw new UsageError(`no account with id or name "${ref.slice(0, 80)}". See \`tokenproxy accounts list\`.`);
}

/** The audit entry of a CLI change, written in the change's transaction (`tx`). */
export interface CliAudit {
  record(
    tx: Store,
    accountId: string,
    action: 'account.created' | 'account.plan_changed' | 'account.key_rotated',
    objectId: string,
    details?: Readonly<Record<string, unknown>>,
  ): Promise<void>;
}

/** Opens the store (proving the KEK first for commands that write), runs `fn`, closes it. */
export async function withStore(
  config: Config,
  hooks: AccountCommandHooks,
  writes: boolean,
  fn: (store: Store, cli: CliAudit) => Promise<number>,
  options: { readonly mayCreateStore?: boolean } = {},
): Promise<number> {
  // Only `accounts create` may start a store; the others on a mistyped --data-dir would make an
  // empty one and report an empty list, or an unknown account, as if that were the service.
  if (
    config.database === undefined &&
    options.mayCreateStore !== true &&
    !(await sqliteStoreIn(config.dataDir))
  )
    return usage(hooks, `${noStoreIn(config.dataDir)}, or give the server's --config.`);
  const [{ openStore }, { openKek }, { auditRecords, CLI_ACTOR }] = await Promise.all([
    import('../store/open.js'),
    import('../vault/open-kek.js'),
    import('../audit/actions.js'),
  ]);
  const store = await openStore({ database: config.database, dataDir: config.dataDir });
  try {
    // Same check as serve: a command run with the wrong KEK writes nothing to the store.
    if (writes) await (await openKek(config, hooks.env, store)).close();
    return await fn(store, {
      async record(tx, accountId, action, objectId, details) {
        const { entry, event } = auditRecords({
          accountId,
          action,
          objectId,
          actor: CLI_ACTOR,
          ip: null,
          at: new Date(),
          details,
        });
        await tx.audit.record(entry, event);
      },
    });
  } catch (err) {
    if (err instanceof UsageError) return usage(hooks, err.message);
    throw err;
  } finally {
    await store.close();
  }
}

export function usage(hooks: AccountCommandHooks, message: string): number {
  hooks.stderr(`tokenproxy: ${message}`);
  return 2;
}
