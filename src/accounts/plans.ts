/** What each plan allows. One table, read by token creation, the account view and (later) quotas. */
export interface PlanLimits {
  /** Active (not revoked, not expired) tokens; null = no cap. */
  readonly activeTokens: number | null;
  /** Proxied requests per calendar month (UTC); null = no cap. */
  readonly requestsPerMonth: number | null;
}

/** The plans in force, by name: the built-in ones plus the config file's (see plan-config.ts). */
export type PlanTable = Readonly<Record<string, PlanLimits>>;

/** Built in; the config file's `plans` may change their limits and add plans of its own. */
export const PLANS: PlanTable = Object.freeze({
  free: Object.freeze({ activeTokens: 3, requestsPerMonth: 100_000 }),
  unlimited: Object.freeze({ activeTokens: null, requestsPerMonth: null }),
});

/**
 * The limits of a plan name. An account whose plan was removed from the config file gets `free`'s
 * limits (`tokenproxy accounts list` marks it): a typo must never lift an account's caps.
 */
export function planLimits(plans: PlanTable, name: string): PlanLimits {
  return plans[name] ?? plans.free ?? (PLANS.free as PlanLimits);
}

/** The usage period a moment falls in: the calendar month in UTC, as `YYYY-MM` plus its first instant. */
export function usagePeriod(now: Date): { period: string; start: string } {
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  return {
    period: `${year}-${String(month + 1).padStart(2, '0')}`,
    start: new Date(Date.UTC(year, month, 1)).toISOString(),
  };
}
