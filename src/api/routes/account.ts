import { usagePeriod } from '../../accounts/plans.js';
import type { AccountRecord } from '../../store/records.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { AccountObject, PatchAccountBody } from '../schemas.js';
import { accountView } from '../views.js';

const TAG = ['account'];

export function accountRoutes(app: ApiServer, deps: ApiDeps): void {
  async function render(account: AccountRecord) {
    const now = deps.now();
    const [requests, activeTokens] = await Promise.all([
      deps.store.accounts.usage(account.id, usagePeriod(now).period),
      deps.store.accounts.countActiveTokens(account.id, now.toISOString()),
    ]);
    return accountView(account, { requests, activeTokens }, deps.plans[account.plan], now, deps.retention);
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
        summary: 'Change the account name or alert e-mail',
        body: PatchAccountBody,
        response: { 200: AccountObject },
      },
    },
    async (request) => {
      const { name, alert_email: alertEmail } = request.body;
      const updated = await deps.store.accounts.update(request.account.id, {
        ...(name === undefined ? {} : { name }),
        ...(alertEmail === undefined ? {} : { alertEmail }),
      });
      return render(updated ?? request.account);
    },
  );
}
