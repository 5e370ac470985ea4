/**
 * One record per proxied request, refused ones included (specification §2.5, DESIGN §4 and §10).
 * Never holds a token, key, header value or body: only request metadata.
 */
export interface RequestLogRecord {
  /** Also returned to the caller in the `x-request-id` response header. */
  readonly requestId: string;
  /** ISO 8601 UTC with milliseconds. */
  readonly timestamp: string;
  /** Null when no token matched. */
  readonly accountId: string | null;
  readonly tokenId: string | null;
  /** Provider id of the path (`/openai/...` → `openai`), null when the path names none. */
  readonly provider: string | null;
  readonly origin: string | null;
  readonly ip: string;
  readonly country: string | null;
  readonly pop: string;
  /** Path as received, with the `/<provider>` prefix, without the query string. */
  readonly path: string;
  readonly status: number;
  /** Whether the origin (and IP) check passed. */
  readonly authorized: boolean;
  /** Time the proxy adds, excluding the provider's own time. */
  readonly latencyMs: number;
  /** The request reached the provider: counts toward request_count, last_used_at and usage. */
  readonly forwarded: boolean;
}

/** Where the proxy hands records. `write` enqueues and returns at once; it never throws. */
export interface RequestLogSink {
  write(record: RequestLogRecord): void;
  /** Resolves when everything written so far is stored. */
  flush(): Promise<void>;
  /** Flushes and stops the background writer. */
  close(): Promise<void>;
}
