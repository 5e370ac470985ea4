/** Store types of the dashboard: sign-in sessions and the per-hour usage rollups behind its Overview. */

export interface NewSession {
  /** SHA-256 hex digest of the cookie value; the value itself is never stored. */
  readonly digest: string;
  readonly accountId: string;
  /** The API key signed in with: the session ends when that key is deleted or rotated. */
  readonly apiKeyId: string;
  readonly createdAt: string;
  readonly idleExpiresAt: string;
  readonly expiresAt: string;
}

export interface SessionRecord extends NewSession {
  readonly lastSeenAt: string;
}

export interface SessionRepo {
  create(session: NewSession): Promise<SessionRecord>;
  /**
   * The session with this digest when it is live at `now`: neither idle nor absolute expiry passed,
   * and the API key it was opened with neither deleted nor rotated.
   */
  findLive(digest: string, now: string): Promise<SessionRecord | undefined>;
  /** Records use at `now` and moves the idle expiry to `idleExpiresAt` (never past `expires_at`). */
  touch(digest: string, now: string, idleExpiresAt: string): Promise<void>;
  /** Ends the session; true when there was one. */
  delete(digest: string): Promise<boolean>;
  /** Deletes every session past either expiry; returns how many. */
  purgeExpired(now: string): Promise<number>;
}

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

/** One delivery of an event to a webhook endpoint, as the Webhooks view lists it. */
export interface DeliveryRecord {
  readonly id: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly status: 'pending' | 'delivered' | 'failed';
  readonly attempts: number;
  readonly lastError: string | null;
  readonly createdAt: string;
  readonly completedAt: string | null;
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
