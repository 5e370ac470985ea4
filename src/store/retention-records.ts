/** Store types of retention (src/retention): deleting old history in small batches. */

export interface RetentionRepo {
  /** Every account id, and null for request-log records no token matched (they have no account). */
  historyOwners(): Promise<readonly (string | null)[]>;
  /** Deletes up to `limit` of the owner's oldest request-log records older than `before`; returns how many. */
  deleteRequestLogs(accountId: string | null, before: string, limit: number): Promise<number>;
  deleteAnomalies(accountId: string, before: string, limit: number): Promise<number>;
  /**
   * Deletes up to `limit` of the account's events older than `before` that no delivery waits on any
   * more (every delivery delivered or failed), with their deliveries and attempts, in one transaction.
   */
  deleteFinishedEvents(accountId: string, before: string, limit: number): Promise<number>;
  /** Deletes the account's rollups of up to `limit` hours older than `before`; returns the rows deleted. */
  deleteRollups(accountId: string, before: string, limit: number): Promise<number>;
  /**
   * Deletes the account's per-model rollups of up to `limit` hours older than `before`, except those
   * a `total` budget still counts (all of the account's when its own budget is `total`, else those of
   * its tokens with one); returns the rows deleted.
   */
  deleteModelRollups(accountId: string, before: string, limit: number): Promise<number>;
  /**
   * SQLite: returns up to `maxPages` free pages to the file system (`incremental_vacuum`), when the
   * file is in incremental auto-vacuum mode. Reports what it did; PostgreSQL's autovacuum does this.
   */
  reclaimSpace(maxPages: number): Promise<SpaceReclaim>;
}

export type SpaceReclaim =
  | { readonly kind: 'not_needed' }
  /** SQLite file made before auto_vacuum was set: space is reused, but not returned (docs/operations.md). */
  | { readonly kind: 'needs_vacuum'; readonly freePages: number }
  | { readonly kind: 'reclaimed'; readonly pages: number; readonly freePagesLeft: number };
