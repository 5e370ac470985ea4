/**
 * Per-hour usage rollups: the request counts behind the dashboard Overview and `GET /v1/usage`, and
 * the tokens and cost that budgets count.
 */

/** One hour's count of one outcome (`forwarded` or a refusal reason) for one account. */
export interface UsageRollup {
  readonly accountId: string;
  /** Start of the hour, ISO 8601 UTC with milliseconds (`2026-01-02T03:00:00.000Z`). */
  readonly hour: string;
  readonly outcome: string;
  readonly requests: number;
}

export interface UsageRollupRepo {
  /** Adds each entry's `requests` to its (account, hour, outcome) row, in one transaction. */
  add(rollups: readonly UsageRollup[]): Promise<void>;
  /** The account's rows with `from <= hour < to`, oldest first. */
  range(accountId: string, from: string, to: string): Promise<UsageRollup[]>;
}

/** Issue 19: per hour, token and model (`''` when unknown), what the token spent. */
export interface UsageModelRollup {
  readonly accountId: string;
  readonly hour: string;
  readonly tokenId: string;
  readonly model: string;
  readonly requests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly costMicros: number;
}

/** Tokens and cost summed over a span of hours. */
export interface Spent {
  readonly tokens: number;
  readonly costMicros: number;
}

export interface UsageModelRollupRepo {
  /** Adds each entry to its (account, hour, token, model) row, in one transaction. */
  add(rollups: readonly UsageModelRollup[]): Promise<void>;
  /** The account's rows with `from <= hour < to` (of one token when given), oldest first. */
  range(accountId: string, from: string, to: string, tokenId?: string): Promise<UsageModelRollup[]>;
  /** What a token (or, with `tokenId` null, the whole account) spent from `from` on. */
  spent(accountId: string, tokenId: string | null, from: string): Promise<Spent>;
}
