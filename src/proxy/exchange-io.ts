import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { Http2ServerRequest, Http2ServerResponse, type ServerHttp2Stream } from 'node:http2';
import type { Readable } from 'node:stream';

/**
 * What the proxy uses of a request and its response, whichever protocol carried them: node:http's
 * IncomingMessage/ServerResponse (HTTP/1.1) and node:http2's compatibility Http2ServerRequest/
 * Http2ServerResponse (HTTP/2) both fit, so the request flow is written once for both.
 */
export interface ProxyRequest extends Readable {
  readonly method?: string | undefined;
  /** Origin-form target (`:path` on HTTP/2). */
  readonly url?: string | undefined;
  readonly headers: IncomingHttpHeaders;
  /** Flat `[name, value, …]`; on HTTP/2 it starts with the pseudo-headers (`:method`, `:path`, …). */
  readonly rawHeaders: string[];
  readonly socket: { readonly remoteAddress?: string | undefined };
}

export interface ProxyResponse {
  readonly statusCode: number;
  readonly headersSent: boolean;
  readonly writableFinished: boolean;
  /** HTTP/1.1 only; an HTTP/2 response that is gone has emitted `close` instead. */
  readonly destroyed?: boolean;
  /** HTTP/1.1 only: use sendHead, which answers HTTP/2 on its stream. */
  writeHead(status: number, headers: string[]): unknown;
  write(chunk: Buffer): boolean;
  end(chunk?: Buffer | string): unknown;
  flushHeaders(): void;
  destroy(): unknown;
  once(event: 'close', listener: () => void): unknown;
  on(event: 'drain', listener: () => void): unknown;
}

/**
 * Whether a request carries a body. HTTP/1.1 says so in its framing headers; HTTP/2 has no
 * `transfer-encoding` and `content-length` is optional, so there the HEADERS frame's END_STREAM flag
 * is the answer (no flag: DATA frames follow).
 */
export function requestHasBody(req: ProxyRequest): boolean {
  if (req instanceof Http2ServerRequest) return !req.stream.endAfterHeaders;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Sends the status and headers (flat `[name, value, …]`). On HTTP/2 the stream responds itself: the
 * compatibility layer's `writeHead` always asks Node to wait for trailers, so every answer's
 * END_STREAM went out in a socket write of its own after a round trip through JavaScript, and it
 * validated and copied the headers one call each first (docs/performance.md, round fifteen).
 */
export function sendHead(res: ProxyResponse, status: number, headers: string[]): void {
  if (!(res instanceof Http2ServerResponse)) {
    res.writeHead(status, headers);
    return;
  }
  const stream = res.stream;
  // As the compatibility layer does: a stream the client already reset gets nothing.
  if (stream.destroyed || stream.closed) return;
  res.statusCode = status; // what the request record reads back (`statusCode`)
  stream.respond(h2Headers(status, headers));
}

/**
 * A flat header list as an HTTP/2 header object, `:status` first and a repeated name (`set-cookie`)
 * as an array. An object, not the raw list, because `respond` takes raw lists only from Node 22.20
 * and 24.7; older 22.x and 24.x would send the list's indexes as header names.
 */
export function h2Headers(status: number, flat: readonly string[]): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ':status': status };
  for (let i = 0; i < flat.length; i += 2) {
    const name = flat[i] as string;
    const value = flat[i + 1] as string;
    const seen = out[name];
    if (seen === undefined) out[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else out[name] = [String(seen), value];
  }
  return out;
}

/**
 * Writes part of the body. On HTTP/2 what is written in one tick goes out in one socket write, as
 * node:http's ServerResponse already does for HTTP/1.1: an HTTP/2 stream sends each write in a
 * send cycle of its own, so an answer's last chunk, the redactor's held-back tail and END_STREAM,
 * all written in the same tick, took three.
 */
export function writeBody(res: ProxyResponse, chunk: Buffer): boolean {
  if (res instanceof Http2ServerResponse) {
    const stream = res.stream;
    if (!stream.writableCorked) {
      stream.cork();
      process.nextTick(uncork, stream);
    }
  }
  return res.write(chunk);
}

function uncork(stream: ServerHttp2Stream): void {
  stream.uncork();
}

/**
 * Ends a response whose upstream broke off mid-answer so that the client sees a broken response, not
 * a short one: HTTP/1.1 loses its connection; an HTTP/2 stream is reset with INTERNAL_ERROR, which
 * destroying it with an error does. Not `close(code)`: it ends the writable side first, and a stream
 * answered without trailers (sendHead) then sends END_STREAM before the reset, a complete-looking
 * answer. A plain destroy would reset with NO_ERROR, which a client may also take for complete.
 */
export function breakResponse(res: ProxyResponse): void {
  if (res instanceof Http2ServerResponse) res.stream.destroy(UPSTREAM_BROKE_OFF);
  else res.destroy();
}

/** Only its kind matters (any error but an AbortError resets with INTERNAL_ERROR); nothing reads it. */
const UPSTREAM_BROKE_OFF = new Error('the provider broke off its answer');

/**
 * Whether the whole response went out when it closes. An HTTP/2 stream reset by the client has its
 * writable side ended by Node on the way down, so there `aborted` is what tells a cut stream apart.
 */
export function responseCompleted(res: ProxyResponse): boolean {
  if (res instanceof Http2ServerResponse) return res.writableFinished && !res.stream.aborted;
  return res.writableFinished;
}
