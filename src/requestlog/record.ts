import type { RequestLogEntry } from '../store/records.js';

/**
 * One record per proxied request, refused ones included (specification §2.5, DESIGN §4 and §10).
 * Never holds a token, key, header value or body: only request metadata.
 */
export interface RequestLogRecord extends Omit<RequestLogEntry, 'id'> {
  /** The stored record's `id`: also returned to the caller as `x-tokenproxy-request-id`. */
  readonly requestId: string;
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

/** Most bytes (UTF-8) of a path a record keeps (docs/api.md): a 16 KiB path must not burden the log. */
export const MAX_RECORD_PATH_BYTES = 2048;
/**
 * Most bytes of path and origin a refused request's record (and anomaly entry) keeps. Refusals are
 * what anyone holding a public token can send at line rate, from any origin, with whatever path and
 * Origin they like: at 2 KiB each a flood of them wrote ~3.7 MB/s to the database. 256 bytes still
 * show which endpoint and which site it was; a forwarded request keeps MAX_RECORD_PATH_BYTES.
 */
export const MAX_REFUSED_RECORD_BYTES = 256;
/** Ends a path that was cut to MAX_RECORD_PATH_BYTES. */
export const PATH_CUT_MARK = '…[cut]';
const MARK_BYTES = Buffer.byteLength(PATH_CUT_MARK);

/** The most bytes of path and origin a record keeps, by whether its request reached the provider. */
export function recordTextLimit(forwarded: boolean): number {
  return forwarded ? MAX_RECORD_PATH_BYTES : MAX_REFUSED_RECORD_BYTES;
}

/**
 * The origin as a record stores it: the one the checks used, else, when the request sent an Origin
 * that is not one (`javascript:…`, a path, spaces), that header as sent, so the anomaly log shows
 * what came and not "(none)". Cut like a path: one request must not carry kilobytes into the log.
 */
export function recordOrigin(
  checked: string | undefined,
  header: string | undefined,
  maxBytes = MAX_RECORD_PATH_BYTES,
): string | null {
  const origin = checked ?? header;
  return origin === undefined ? null : recordPath(origin, maxBytes);
}

/**
 * The path as a record stores it: unchanged when it fits, else its start and PATH_CUT_MARK, in at most
 * `maxBytes` bytes (MAX_RECORD_PATH_BYTES, or MAX_REFUSED_RECORD_BYTES for a refused request). Cut
 * between characters, never inside one. A value that fits is returned as is: nothing is allocated.
 */
export function recordPath(path: string, maxBytes = MAX_RECORD_PATH_BYTES): string {
  // Each UTF-16 unit is at most 3 UTF-8 bytes: most paths are decided without counting.
  if (path.length * 3 <= maxBytes) return path;
  if (Buffer.byteLength(path) <= maxBytes) return path;
  const room = maxBytes - MARK_BYTES;
  let bytes = 0;
  let end = 0;
  while (end < path.length) {
    const code = path.codePointAt(end) as number;
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (bytes + size > room) break;
    bytes += size;
    end += code >= 0x10000 ? 2 : 1;
  }
  return path.slice(0, end) + PATH_CUT_MARK;
}
