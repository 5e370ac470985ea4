import type { AnomalyEntry, Page, PageQuery, RequestLogEntry } from './records.js';

/** Store types of the proxy's history: a record of every request, and the anomalies seen in them. */

export interface RequestLogFilter {
  readonly tokenId?: string | undefined;
  readonly authorized?: boolean | undefined;
  /** Inclusive range of HTTP statuses (one status: both ends equal). */
  readonly status?: readonly [number, number] | undefined;
  /** Inclusive lower and exclusive upper bound on `timestamp` (ISO text). */
  readonly since?: string | undefined;
  readonly until?: string | undefined;
  readonly errorCode?: string | undefined;
  readonly ip?: string | undefined;
}

export interface RequestLogRepo {
  /** Idempotent per id, so a batch retried after an unclear failure is not stored twice. */
  insertMany(entries: readonly RequestLogEntry[]): Promise<void>;
  /** The account's records, newest first; `page.after.createdAt` is a record's `timestamp`. */
  list(accountId: string, filter: RequestLogFilter, page: PageQuery): Promise<Page<RequestLogEntry>>;
  /** One of the account's records by request id (`x-tokenproxy-request-id`). */
  get(accountId: string, requestId: string): Promise<RequestLogEntry | undefined>;
}

export interface AnomalyRepo {
  /** Idempotent per id, like request logs. */
  insertMany(entries: readonly AnomalyEntry[]): Promise<void>;
  /** The account's anomalies, newest first; `page.after.createdAt` is an entry's `timestamp`. */
  list(
    accountId: string,
    filter: { readonly tokenId?: string | undefined },
    page: PageQuery,
  ): Promise<Page<AnomalyEntry>>;
}
