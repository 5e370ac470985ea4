import { resolve } from 'node:path';
import type { Command } from 'commander';
import { planLimits, usagePeriod } from '../accounts/plans.js';
import type { Config } from '../config/load.js';
import { displayNameProblem } from '../rules/display-name.js';
import { findAccount, usage, UsageError, withStore, type AccountCommandHooks } from './account-store.js';
import { registerAccountDelete } from './accounts-delete.js';

export type { AccountCommandHooks } from './account-store.js';

/**
 * `tokenproxy accounts …`: the operator's account administration, straight on the data dir or
 * database, also while the server runs. The server looks API keys up on every request and re-reads
 * plans at least every second, so a change here reaches every process at once (docs/decisions.md).
 * Every change is written to the audit log as done by "cli".
 */
export function registerAccountCommands(program: Command, hooks: AccountCommandHooks): void {
  const accounts = program.command('accounts').description('Manage accounts directly in the store');
  hooks
    .withSettings(
      accounts
        .command('create')
        .description('Create an account and print its API key (works while the server runs)')
        .requiredOption('--name <name>', 'account name')
        .option('--plan <plan>', 'plan: free, unlimited or one of the config file\'s "plans"', 'free')
        .option('--json', 'print {"account_id", "api_key"} as JSON'),
      hooks.writeSettings,
    )
    .action((opts: Record<string, unknown>) => hooks.run(createCommand(opts, hooks)));

  hooks
    .withSettings(
      accounts
        .command('list')
        .description('List every account with its plan, usage this month and live API keys')
        .option('--json', 'print a JSON array instead of a table'),
      hooks.readSettings,
    )
    .action((opts: Record<string, unknown>) => hooks.run(listCommand(opts, hooks)));

  hooks
    .withSettings(
      accounts
        .command('set-plan')
        .description("Move an account to another plan; the server applies the plan's limits within a second")
        .argument('<account>', 'account id (acct_…) or name')
        .argument('<plan>', 'free, unlimited or one of the config file\'s "plans"'),
      hooks.writeSettings,
    )
    .action((account: string, plan: string, opts: Record<string, unknown>) =>
      hooks.run(setPlanCommand(account, plan, opts, hooks)),
    );

  hooks
    .withSettings(
      accounts
        .command('rotate-key')
        .description(
          'Replace an API key of an account: prints the new key once; the old key stops working at once',
        )
        .argument('<account>', 'account id (acct_…) or name')
        .option(
          '--key-name <name>',
          'which of its API keys (by name); made anew if it was deleted',
          'default',
        )
        .option('--json', 'print {"account_id", "api_key_id", "api_key"} as JSON'),
      hooks.writeSettings,
    )
    .action((account: string, opts: Record<string, unknown>) =>
      hooks.run(rotateKeyCommand(account, opts, hooks)),
    );
  registerAccountDelete(accounts, hooks);
}

async function createCommand(opts: Record<string, unknown>, hooks: AccountCommandHooks): Promise<number> {
  const config = hooks.configFrom(opts);
  const name = String(opts.name).trim();
  const nameProblem = displayNameProblem(name);
  if (nameProblem !== undefined) return usage(hooks, `--name must be ${nameProblem}.`);
  const plan = String(opts.plan);
  const planError = unknownPlan(config, plan);
  if (planError !== undefined) return usage(hooks, `--plan: ${planError}`);
  const { createAccount } = await import('../accounts/create-account.js');
  return withStore(
    config,
    hooks,
    true,
    async (store, cli) => {
      const first = (await store.accounts.listAll()).length === 0;
      const { account, apiKey } = await store.transaction(async (tx) => {
        const created = await createAccount(tx, name, plan, new Date());
        await cli.record(tx, created.account.id, 'account.created', created.account.id);
        return created;
      });
      if (opts.json === true) {
        hooks.stdout(JSON.stringify({ account_id: account.id, api_key: apiKey }));
      } else {
        hooks.stdout(`Created account "${account.name}" (${account.id}, plan ${account.plan}).`);
        hooks.stdout(`API key (shown only this once): ${apiKey}`);
      }
      // A mistyped --data-dir makes a store of its own, and its key works on no running server: say
      // which store this was when it had no account before (a new one, or one no server has started on).
      if (first) {
        const where =
          config.database === undefined
            ? `SQLite in ${resolve(config.dataDir)}`
            : 'the PostgreSQL database of --database';
        hooks.stderr(
          `tokenproxy: this is the first account of this store (${where}). Start tokenproxy serve with the same ` +
            'data dir or database, or the key will not work there.',
        );
      }
      return 0;
    },
    { mayCreateStore: true },
  );
}

async function listCommand(opts: Record<string, unknown>, hooks: AccountCommandHooks): Promise<number> {
  const config = hooks.configFrom(opts);
  return withStore(config, hooks, false, async (store) => {
    const now = new Date();
    const period = usagePeriod(now);
    const rows = [];
    for (const account of await store.accounts.listAll()) {
      const [requests, activeTokens, keys] = await Promise.all([
        store.accounts.usage(account.id, period.period),
        store.accounts.countActiveTokens(account.id, now.toISOString()),
        store.apiKeys.list(account.id, { limit: 100 }),
      ]);
      const limits = planLimits(config.plans, account.plan);
      rows.push({
        account_id: account.id,
        name: account.name,
        plan: account.plan,
        plan_known: config.plans[account.plan] !== undefined,
        limits: { active_tokens: limits.activeTokens, requests_per_month: limits.requestsPerMonth },
        usage: { period_start: period.start, requests, active_tokens: activeTokens },
        api_keys: keys.items.map((k) => ({ id: k.id, name: k.name, scope: k.scope, start: k.start })),
        created_at: account.createdAt,
      });
    }
    if (opts.json === true) {
      hooks.stdout(JSON.stringify(rows, null, 2));
      return 0;
    }
    const cap = (n: number | null) => (n === null ? '∞' : String(n));
    const header = ['ID', 'NAME', 'PLAN', 'TOKENS', 'REQUESTS', 'API KEYS', 'CREATED'];
    const body = rows.map((r) => [
      r.account_id,
      r.name,
      r.plan_known ? r.plan : `${r.plan} (unknown: free limits)`,
      `${r.usage.active_tokens}/${cap(r.limits.active_tokens)}`,
      `${r.usage.requests}/${cap(r.limits.requests_per_month)}`,
      String(r.api_keys.length),
      r.created_at.slice(0, 10),
    ]);
    for (const line of formatTable(header, body)) hooks.stdout(line);
    if (rows.length === 0) hooks.stdout('(no accounts)');
    return 0;
  });
}

async function setPlanCommand(
  ref: string,
  plan: string,
  opts: Record<string, unknown>,
  hooks: AccountCommandHooks,
): Promise<number> {
  const config = hooks.configFrom(opts);
  const planError = unknownPlan(config, plan);
  if (planError !== undefined) return usage(hooks, planError);
  return withStore(config, hooks, true, async (store, cli) => {
    const account = await findAccount(store, ref);
    await store.transaction(async (tx) => {
      const updated = await tx.accounts.setPlan(account.id, plan);
      if (updated === undefined) throw new UsageError(`account ${account.id} was deleted meanwhile.`);
      if (account.plan !== plan) {
        await cli.record(tx, account.id, 'account.plan_changed', account.id, {
          plan,
          previous_plan: account.plan,
        });
      }
    });
    const limits = planLimits(config.plans, plan);
    const cap = (n: number | null) => (n === null ? 'no cap' : String(n));
    hooks.stdout(
      `Account "${account.name}" (${account.id}) is now on plan ${plan} (was ${account.plan}): ` +
        `active tokens ${cap(limits.activeTokens)}, requests per month ${cap(limits.requestsPerMonth)}.`,
    );
    return 0;
  });
}

async function rotateKeyCommand(
  ref: string,
  opts: Record<string, unknown>,
  hooks: AccountCommandHooks,
): Promise<number> {
  const config = hooks.configFrom(opts);
  const keyName = String(opts.keyName).trim();
  const keyNameProblem = displayNameProblem(keyName);
  if (keyNameProblem !== undefined) return usage(hooks, `--key-name must be ${keyNameProblem}.`);
  const { apiKeyStart, newApiKey, newId, secretDigest } = await import('../ids/formats.js');
  return withStore(config, hooks, true, async (store, cli) => {
    const account = await findAccount(store, ref);
    const secret = newApiKey();
    const { key, revoked } = await store.transaction(async (tx) => {
      const replaced = await tx.apiKeys.replace(
        {
          id: newId('apiKey'),
          accountId: account.id,
          name: keyName,
          digest: secretDigest(secret),
          start: apiKeyStart(secret),
          createdAt: new Date().toISOString(),
        },
        new Date().toISOString(),
      );
      await cli.record(tx, account.id, 'account.key_rotated', replaced.key.id);
      return replaced;
    });
    if (opts.json === true) {
      hooks.stdout(JSON.stringify({ account_id: account.id, api_key_id: key.id, api_key: secret }));
    } else {
      hooks.stdout(
        revoked.length === 0
          ? `Account "${account.name}" (${account.id}) had no live key named "${keyName}": created one (${key.id}).`
          : `Replaced API key "${keyName}" of account "${account.name}" (${account.id}); the old key no longer works.`,
      );
      hooks.stdout(`New API key (shown only this once): ${secret}`);
    }
    return 0;
  });
}

/** Columns padded to their widest cell; names are user text, so widths count code points. */
function formatTable(header: readonly string[], body: readonly (readonly string[])[]): string[] {
  const all = [header, ...body];
  const width = (cell: string) => Array.from(cell).length;
  const widths = header.map((_, i) => Math.max(...all.map((row) => width(row[i] ?? ''))));
  return all.map((row) =>
    row
      .map((cell, i) => cell + ' '.repeat(Math.max(0, (widths[i] ?? 0) - width(cell))))
      .join('  ')
      .trimEnd(),
  );
}

function unknownPlan(config: Config, plan: string): string | undefined {
  if (config.plans[plan] !== undefined) return undefined;
  return (
    `unknown plan "${plan.slice(0, 40)}". Plans in force: ${Object.keys(config.plans).join(', ')}. ` +
    'Plans of your own go in the config file\'s "plans" (pass the same --config as the server).'
  );
}
