import { api, type Account, type BudgetStatus, type Usage } from '../api';
import { budgetUse, count, reasonLabel } from '../format';
import { Alert, PageHeader, useLoad } from '../ui';
import { UsageChart } from './chart';

export function Overview(props: { account: Account }) {
  const { data, error } = useLoad(async () => {
    const [account, usage] = await Promise.all([
      api<Account>('GET', '/account'),
      api<Usage>('GET', '/usage?window=24h&bucket=1h'),
    ]);
    return { account, usage };
  }, [props.account.account_id]);
  const account = data?.account ?? props.account;
  const usage = data?.usage;
  const reasons = usage === undefined ? [] : Object.entries(usage.refused_by_reason).filter(([, n]) => n > 0);

  return (
    <section aria-labelledby="overview-title">
      <PageHeader
        title="Overview"
        lead="Plan usage and what tokenproxy forwarded or refused in the last 24 hours."
      />
      {error !== null && <Alert>{error}</Alert>}
      <div class="stats">
        <Stat
          id="stat-requests"
          label="Requests this month"
          value={account.usage.requests}
          limit={account.limits.requests_per_month}
        />
        <Stat
          id="stat-tokens"
          label="Active tokens"
          value={account.usage.active_tokens}
          limit={account.limits.active_tokens}
        />
        {usage?.budgets
          .filter((b) => b.scope === 'account')
          .map((b) => (
            <BudgetStat key="account" id="stat-account-budget" label="Account budget" status={b} />
          ))}
        <div class="stat">
          <span class="stat-label">Spend, last 24 h</span>
          <span class="stat-value" data-testid="spend-24h">
            {usage === undefined ? '…' : `$${(usage.spend.cost_micros / 1_000_000).toFixed(2)}`}
          </span>
        </div>
        <div class="stat">
          <span class="stat-label">Forwarded, last 24 h</span>
          <span class="stat-value" data-testid="forwarded-24h">
            {usage === undefined ? '…' : count(usage.forwarded)}
          </span>
        </div>
        <div class="stat">
          <span class="stat-label">Refused, last 24 h</span>
          <span
            class={`stat-value ${usage !== undefined && usage.refused > 0 ? 'bad' : ''}`}
            data-testid="refused-24h"
          >
            {usage === undefined ? '…' : count(usage.refused)}
          </span>
        </div>
      </div>
      <div class="grid-2">
        <div class="card">
          <h2>Requests per hour</h2>
          {usage !== undefined && <UsageChart usage={usage} />}
        </div>
        <div class="card">
          <h2>Refused in the last 24 h, by reason</h2>
          {usage !== undefined && reasons.length === 0 && <p class="empty">No refused requests. </p>}
          {reasons.length > 0 && (
            <table class="table compact" aria-label="Refused requests by reason">
              <thead>
                <tr>
                  <th scope="col">Reason</th>
                  <th scope="col" class="num">
                    Requests
                  </th>
                </tr>
              </thead>
              <tbody>
                {reasons.map(([reason, n]) => (
                  <tr key={reason}>
                    <td>{reasonLabel(reason)}</td>
                    <td class="num">{count(n)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      </div>
    </section>
  );
}

function Stat(props: { id: string; label: string; value: number; limit: number | null }) {
  const share = props.limit === null || props.limit === 0 ? null : Math.min(1, props.value / props.limit);
  return (
    <div class="stat" data-testid={props.id}>
      <span class="stat-label">{props.label}</span>
      <span class="stat-value">
        {count(props.value)}
        <span class="stat-limit"> / {props.limit === null ? 'unlimited' : count(props.limit)}</span>
      </span>
      {share !== null && (
        <div
          class="meter"
          role="meter"
          aria-label={props.label}
          aria-valuemin={0}
          aria-valuemax={props.limit ?? 0}
          aria-valuenow={props.value}
        >
          <div class={`meter-fill ${share > 0.9 ? 'bad' : ''}`} style={{ width: `${share * 100}%` }} />
        </div>
      )}
    </div>
  );
}

/** Spend against a budget, with the same meter as the plan limits. */
export function BudgetStat(props: { id: string; label: string; status: BudgetStatus }) {
  const b = props.status;
  return (
    <div class="stat" data-testid={props.id}>
      <span class="stat-label">{props.label}</span>
      <span class="stat-value">{budgetUse(b)}</span>
      <div
        class="meter"
        role="meter"
        aria-label={props.label}
        aria-valuemin={0}
        aria-valuemax={b.limit}
        aria-valuenow={b.used}
      >
        <div
          class={`meter-fill ${b.fraction > 0.8 ? 'bad' : ''}`}
          style={{ width: `${b.fraction * 100}%` }}
        />
      </div>
    </div>
  );
}
