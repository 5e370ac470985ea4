import type { Command } from 'commander';
import type { AccountHoldings, AccountTable } from '../store/account-records.js';
import { isId } from '../ids/formats.js';
import type { AccountRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { findAccount, UsageError, withStore, type AccountCommandHooks } from './account-store.js';

/**
 * `tokenproxy accounts delete ACCOUNT --confirm NAME`: offboarding. Deletes the account and every row
 * that belongs to it in one transaction (src/store/kysely/account-deletion.ts). Without `--confirm`
 * it only says what would be deleted and exits 2; `--confirm` must repeat the account's name, so a
 * mistyped or pasted id cannot delete another customer (docs/decisions.md). Running servers need no
 * message: they look API keys and dashboard sessions up on every request and keep a token for at
 * most 1 s, so the account's credentials are refused within a second in every process.
 */
export function registerAccountDelete(accounts: Command, hooks: AccountCommandHooks): void {
  hooks
    .withSettings(
      accounts
        .command('delete')
        .description(
          'Delete an account and everything it holds (keys, tokens, API keys, webhooks, logs, audit log); cannot be undone',
        )
        .argument('<account>', 'account id (acct_…) or name')
        .option(
          '--confirm <name>',
          "the account's name: without it nothing is deleted, and what would be is shown",
        )
        .option('--json', 'print {"account_id", "name", "deleted_at", "deleted": {table: rows}} as JSON'),
      hooks.writeSettings,
    )
    .action((account: string, opts: Record<string, unknown>) =>
      hooks.run(deleteCommand(account, opts, hooks)),
    );
}

/** What each table's rows are, for the operator; a table without a label fails the build. */
const LABELS: Readonly<Record<AccountTable, string>> = {
  provider_keys: 'provider keys',
  tokens: 'tokens',
  api_keys: 'API keys',
  dashboard_sessions: 'dashboard sessions',
  webhooks: 'webhooks',
  events: 'events',
  deliveries: 'deliveries',
  delivery_attempts: 'delivery attempts',
  request_logs: 'request-log records',
  anomalies: 'anomaly entries',
  usage: 'monthly usage counts',
  usage_rollups: 'hourly usage rollups',
  usage_model_rollups: 'per-model usage rollups',
  idempotency_keys: 'idempotency records',
  audit_log: 'audit-log entries',
};

/** `2 provider keys, 3 tokens, …` in LABELS' order, every table named (0 too: nothing is hidden). */
export function describeHoldings(holdings: AccountHoldings): string {
  return (Object.keys(LABELS) as AccountTable[])
    .map((table) => `${holdings[table]} ${LABELS[table]}`)
    .join(', ');
}

/** The name quoted for a POSIX shell, so the printed command can be pasted as is. */
function shellQuoted(text: string): string {
  return /^[A-Za-z0-9_.@%+=:,/-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

function described(account: AccountRecord): string {
  return `"${account.name}" (${account.id}, plan ${account.plan}, created ${account.createdAt.slice(0, 10)})`;
}

async function deleteCommand(
  ref: string,
  opts: Record<string, unknown>,
  hooks: AccountCommandHooks,
): Promise<number> {
  const config = hooks.configFrom(opts);
  const confirm = typeof opts.confirm === 'string' ? opts.confirm : undefined;
  return withStore(config, hooks, true, async (store) => {
    const account = await findAccount(store, ref).catch(async (err: unknown) => {
      if (isId('account', ref) && (await leftovers(store, ref, confirm, opts, hooks))) return undefined;
      throw err;
    });
    if (account === undefined) return 0;
    if (confirm === undefined) {
      const holdings = await store.accounts.holdings(account.id);
      throw new UsageError(
        `nothing was deleted. \`accounts delete\` would delete account ${described(account)} and all it holds:\n` +
          `  ${describeHoldings(holdings)}.\n` +
          `  This cannot be undone. To delete it, run again with --confirm ${shellQuoted(account.name)} (the account's name).`,
        'confirmation_required',
      );
    }
    if (confirm !== account.name) {
      throw new UsageError(
        `--confirm must be the name of account ${account.id}, "${account.name}"; got "${confirm.slice(0, 80)}". ` +
          'Nothing was deleted.',
      );
    }
    const deletedAt = new Date().toISOString();
    const deleted = await store.accounts.delete(account.id);
    if (deleted === undefined) throw new UsageError(`account ${account.id} was deleted meanwhile.`);
    // The account's own audit log went with it: this output is the operator's record of the deletion.
    if (opts.json === true) {
      hooks.stdout(
        JSON.stringify({
          account_id: account.id,
          name: account.name,
          plan: account.plan,
          deleted_at: deletedAt,
          deleted,
        }),
      );
    } else {
      hooks.stdout(`Deleted account ${described(account)} at ${deletedAt}: ${describeHoldings(deleted)}.`);
      hooks.stdout('Its tokens and API keys are refused by every running server within a second.');
      hooks.stdout(
        `Requests still in flight may log under its id for a while: \`tokenproxy accounts delete ${account.id}\` later removes those rows.`,
      );
    }
    if ((await store.accounts.count()) === 0) {
      hooks.stderr(
        'tokenproxy: that was the last account of this store. The next `tokenproxy serve` start creates a new ' +
          '"default" account and prints its API key, as on a new install; `tokenproxy accounts create` makes one now.',
      );
    }
    return 0;
  });
}

/**
 * `accounts delete ID` for an account already deleted: the rows that requests in flight at its
 * deletion wrote afterwards (request-log records, anomalies, rollups). False when there are none
 * (the caller reports the unknown account); with `--confirm ID` they are deleted.
 */
async function leftovers(
  store: Store,
  accountId: string,
  confirm: string | undefined,
  opts: Record<string, unknown>,
  hooks: AccountCommandHooks,
): Promise<boolean> {
  const holdings = await store.accounts.holdings(accountId);
  if (Object.values(holdings).every((n) => n === 0)) return false;
  if (confirm !== accountId) {
    throw new UsageError(
      `nothing was deleted. Account ${accountId} no longer exists, but rows written after its deletion ` +
        `(requests that were in flight) still carry its id:\n  ${describeHoldings(holdings)}.\n` +
        `  To delete them, run again with --confirm ${accountId}.`,
      confirm === undefined ? 'confirmation_required' : 'invalid_usage',
    );
  }
  const deleted = await store.accounts.deleteLeftovers(accountId);
  if (deleted === undefined) throw new UsageError(`account ${accountId} exists again: nothing was deleted.`);
  if (opts.json === true) {
    hooks.stdout(JSON.stringify({ account_id: accountId, leftovers: true, deleted }));
  } else {
    hooks.stdout(`Deleted the rows left under deleted account ${accountId}: ${describeHoldings(deleted)}.`);
  }
  return true;
}
