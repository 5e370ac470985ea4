/** Dashboard sign-in sessions: what the cookie stands for, kept by its digest. */

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
