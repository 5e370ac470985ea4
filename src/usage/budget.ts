/**
 * Budgets on tokens and accounts (issue 19): a cap on spend in USD or on provider tokens, per UTC
 * day, UTC calendar month or in total. Pure rules: the shape, its checks and the period windows.
 */

export type BudgetPeriod = 'day' | 'month' | 'total';
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ['day', 'month', 'total'];

/** As the API and the store spell it: exactly one of `amount_usd` and `tokens`. */
export interface Budget {
  readonly amount_usd?: number | undefined;
  readonly tokens?: number | undefined;
  readonly period: BudgetPeriod;
}

/** Largest USD amount accepted (micro-USD stay exact integers far below 2^53). */
export const MAX_BUDGET_USD = 1_000_000_000;
export const MAX_BUDGET_TOKENS = 1e15;

export type BudgetCheck =
  { readonly ok: true; readonly budget: Budget } | { readonly ok: false; readonly message: string };

/** Checks a budget from the API; `field` names it in the message (`budget`). */
export function parseBudget(value: unknown, field: string): BudgetCheck {
  const example = `{"amount_usd": 20, "period": "month"} or {"tokens": 2000000, "period": "day"}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, message: `Invalid field "${field}": expected ${example}, or null for none.` };
  }
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) {
    if (key !== 'amount_usd' && key !== 'tokens' && key !== 'period') {
      return { ok: false, message: `Invalid field "${field}": unknown field "${key}"; expected ${example}.` };
    }
  }
  if (typeof v.period !== 'string' || !(BUDGET_PERIODS as readonly string[]).includes(v.period)) {
    return {
      ok: false,
      message: `Invalid field "${field}.period": expected "day", "month" (UTC calendar month) or "total".`,
    };
  }
  const period = v.period as BudgetPeriod;
  const hasUsd = v.amount_usd !== undefined;
  const hasTokens = v.tokens !== undefined;
  if (hasUsd === hasTokens) {
    return {
      ok: false,
      message: `Invalid field "${field}": give exactly one of "amount_usd" (USD) and "tokens" (input + output tokens).`,
    };
  }
  if (hasUsd) {
    const usd = v.amount_usd;
    if (typeof usd !== 'number' || !Number.isFinite(usd) || usd <= 0 || usd > MAX_BUDGET_USD) {
      return {
        ok: false,
        message: `Invalid field "${field}.amount_usd": expected a number of USD above 0 and at most ${MAX_BUDGET_USD}.`,
      };
    }
    return { ok: true, budget: { amount_usd: usd, period } };
  }
  const tokens = v.tokens;
  if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens < 1 || tokens > MAX_BUDGET_TOKENS) {
    return {
      ok: false,
      message: `Invalid field "${field}.tokens": expected a whole number of tokens from 1 to ${MAX_BUDGET_TOKENS}.`,
    };
  }
  return { ok: true, budget: { tokens, period } };
}

/** What the counters count for a budget: micro-USD or tokens. */
export function budgetLimit(budget: Budget): number {
  return budget.amount_usd !== undefined
    ? Math.round(budget.amount_usd * 1_000_000)
    : (budget.tokens as number);
}

export function isUsdBudget(budget: Budget): boolean {
  return budget.amount_usd !== undefined;
}

/** The stored JSON, fields in a fixed order. */
export function budgetText(budget: Budget | null): string | null {
  if (budget === null) return null;
  return JSON.stringify(
    budget.amount_usd !== undefined
      ? { amount_usd: budget.amount_usd, period: budget.period }
      : { tokens: budget.tokens, period: budget.period },
  );
}

/** The stored JSON back; null for none or for text that is not a budget. */
export function budgetFromText(text: string | null): Budget | null {
  if (text === null) return null;
  try {
    const parsed = parseBudget(JSON.parse(text), 'budget');
    return parsed.ok ? parsed.budget : null;
  } catch {
    return null;
  }
}

export interface PeriodWindow {
  /** Part of the counter key: `2026-11-23`, `2026-11` or `total`. */
  readonly name: string;
  /** ISO start of the window (the epoch for `total`). */
  readonly start: string;
  /** When the budget resets, ms since the epoch; Infinity for `total`. */
  readonly end: number;
}

/** The UTC day or calendar month holding `now`, or all time. */
export function periodWindow(period: BudgetPeriod, now: number): PeriodWindow {
  if (period === 'total') return { name: 'total', start: new Date(0).toISOString(), end: Infinity };
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (period === 'month') {
    return {
      name: `${y}-${String(m + 1).padStart(2, '0')}`,
      start: new Date(Date.UTC(y, m, 1)).toISOString(),
      end: Date.UTC(y, m + 1, 1),
    };
  }
  const day = d.getUTCDate();
  return {
    name: `${y}-${String(m + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`,
    start: new Date(Date.UTC(y, m, day)).toISOString(),
    end: Date.UTC(y, m, day + 1),
  };
}

/** "$20.00 per month" or "2000000 tokens per day" — for messages. */
export function describeBudget(budget: Budget): string {
  const amount =
    budget.amount_usd !== undefined ? `$${budget.amount_usd.toFixed(2)}` : `${String(budget.tokens)} tokens`;
  return budget.period === 'total' ? `${amount} in total` : `${amount} per ${budget.period}`;
}
