import { audited } from '../audit.js';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { planLimits, usagePeriod } from '../../accounts/plans.js';
import type { AccountRecord } from '../../store/records.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { AccountObject, PatchAccountBody } from '../schemas.js';
import { accountView } from '../views.js';
import { budgetField } from './token-fields.js';

const TAG = ['account'];

export function accountRoutes(app: ApiServer, deps: ApiDeps): void {
  async function render(account: AccountRecord) {
    const now = deps.now();
    const [requests, activeTokens] = await Promise.all([
      deps.store.accounts.usage(account.id, usagePeriod(now).period),
      deps.store.accounts.countActiveTokens(account.id, now.toISOString()),
    ]);
    return accountView(
      account,
      { requests, activeTokens },
      planLimits(deps.plans, account.plan),
      now,
      deps.retention,
    );
  }

  app.get(
    '/account',
    {
      schema: {
        tags: TAG,
        operationId: 'getAccount',
        summary: 'The account of the API key, with plan and usage',
        response: { 200: AccountObject },
      },
    },
    async (request) => render(request.account),
  );

  app.patch(
    '/account',
    {
      schema: {
        tags: TAG,
        operationId: 'updateAccount',
        summary: 'Change the account name, alert e-mail or budget',
        body: PatchAccountBody,
        response: { 200: AccountObject },
      },
    },
    async (request) => {
      const { name, alert_email: alertEmail, budget, plan } = request.body;
      if (plan !== undefined) throw planChangeForbidden(plan);
      const updated = await audited(deps, request, async (tx, audit) => {
        const account = await tx.accounts.update(request.account.id, {
          ...(name === undefined ? {} : { name }),
          ...(alertEmail === undefined ? {} : { alertEmail }),
          ...(budget === undefined ? {} : { budget: budgetField(budget) }),
        });
        await audit('account.updated', request.account.id);
        return account;
      });
      // The proxy reads the account's budget again on its next request.
      if (budget !== undefined) deps.onCredentialsChanged?.();
      return render(updated ?? request.account);
    },
  );
}

/**
 * A plan sets what an account may use, so the account itself cannot choose it (an API key changing
 * its own account to `unlimited` would lift every cap): plans are the operator's, through the CLI.
 */
function planChangeForbidden(plan: string): TokenProxyError {
  return new TokenProxyError(
    'plan_change_forbidden',
    `An account cannot change its own plan. The operator changes it with \`tokenproxy accounts set-plan ACCOUNT ${plan.slice(0, 40)}\` on the server.`,
    { param: 'plan' },
  );
}
