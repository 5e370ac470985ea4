import type { PlanName } from '../store/records.js';

/** What each plan allows. One table, read by token creation, the account view and (later) quotas. */
export interface PlanLimits {
  /** Active (not revoked, not expired) tokens; null = no cap. */
  readonly activeTokens: number | null;
  /** Proxied requests per calendar month (UTC); null = no cap. */
  readonly requestsPerMonth: number | null;
}

export const PLANS: Readonly<Record<PlanName, PlanLimits>> = Object.freeze({
  free: Object.freeze({ activeTokens: 3, requestsPerMonth: 100_000 }),
  unlimited: Object.freeze({ activeTokens: null, requestsPerMonth: null }),
});

/** The usage period a moment falls in: the calendar month in UTC, as `YYYY-MM` plus its first instant. */
export function usagePeriod(now: Date): { period: string; start: string } {
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  return {
    period: `${year}-${String(month + 1).padStart(2, '0')}`,
    start: new Date(Date.UTC(year, month, 1)).toISOString(),
  };
}
