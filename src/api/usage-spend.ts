import type { Static } from 'typebox';
import type { UsageModelRollup, UsageModelRollupRepo } from '../store/rollup-records.js';
import type { AccountRecord, TokenRecord } from '../store/records.js';
import { budgetLimit, isUsdBudget, periodWindow, type Budget } from '../usage/budget.js';
import type { BudgetStatusObject, SpendObject } from './dashboard-schemas.js';
import type { UsageWindow } from './usage-buckets.js';

type Spend = Static<typeof SpendObject>;
type Line = { requests: number; input_tokens: number; output_tokens: number; cost_micros: number };

const zero = (): Line => ({ requests: 0, input_tokens: 0, output_tokens: 0, cost_micros: 0 });
function addTo(line: Line, row: UsageModelRollup): void {
  line.requests += row.requests;
  line.input_tokens += row.inputTokens;
  line.output_tokens += row.outputTokens;
  line.cost_micros += row.costMicros;
}

/** GET /v1/usage's `spend`: tokens and cost in the window, per bucket, per token and per model. */
export function summarizeSpend(window: UsageWindow, rows: readonly UsageModelRollup[]): Spend {
  const startMs = Date.parse(window.start);
  const count = Math.round((Date.parse(window.end) - startMs) / window.bucketMs);
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: new Date(startMs + i * window.bucketMs).toISOString(),
    ...zero(),
  }));
  const total = zero();
  const byToken = new Map<string, Line>();
  const byModel = new Map<string, Line>();
  for (const row of rows) {
    const bucket = buckets[Math.floor((Date.parse(row.hour) - startMs) / window.bucketMs)];
    if (bucket === undefined) continue;
    addTo(bucket, row);
    addTo(total, row);
    let t = byToken.get(row.tokenId);
    if (t === undefined) byToken.set(row.tokenId, (t = zero()));
    addTo(t, row);
    let m = byModel.get(row.model);
    if (m === undefined) byModel.set(row.model, (m = zero()));
    addTo(m, row);
  }
  return {
    ...total,
    by_token: [...byToken].map(([tokenId, line]) => ({ token_id: tokenId, ...line })),
    by_model: [...byModel].map(([model, line]) => ({ model: model === '' ? null : model, ...line })),
    buckets,
  };
}

/** Spend against each budget of the account and its tokens, in the budget's current period. */
export async function budgetStatuses(
  rollups: Pick<UsageModelRollupRepo, 'spent'>,
  account: AccountRecord,
  tokens: readonly TokenRecord[],
  now: number,
): Promise<Static<typeof BudgetStatusObject>[]> {
  const out: Static<typeof BudgetStatusObject>[] = [];
  const status = async (scope: 'account' | 'token', tokenId: string | null, budget: Budget) => {
    const window = periodWindow(budget.period, now);
    const spent = await rollups.spent(account.id, tokenId, window.start);
    const usd = isUsdBudget(budget);
    const limit = budgetLimit(budget);
    const used = usd ? spent.costMicros : spent.tokens;
    out.push({
      scope,
      token_id: tokenId,
      budget: { ...budget },
      period: window.name,
      used: usd ? used / 1_000_000 : used,
      limit: usd ? (budget.amount_usd as number) : limit,
      unit: usd ? 'usd' : 'tokens',
      fraction: limit > 0 ? Math.min(1, used / limit) : 0,
      resets_at: Number.isFinite(window.end) ? new Date(window.end).toISOString() : null,
    });
  };
  if (account.budget) await status('account', null, account.budget);
  for (const token of tokens) if (token.budget) await status('token', token.id, token.budget);
  return out;
}
