import type { IncomingHttpHeaders } from 'node:http';
import { constants, Http2ServerRequest, Http2ServerResponse } from 'node:http2';
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
 * Ends a response whose upstream broke off mid-answer so that the client sees a broken response, not
 * a short one: HTTP/1.1 loses its connection; an HTTP/2 stream is reset with INTERNAL_ERROR (a plain
 * destroy would reset it with NO_ERROR, which a client may take for a complete answer).
 */
export function breakResponse(res: ProxyResponse): void {
  if (res instanceof Http2ServerResponse) res.stream.close(constants.NGHTTP2_INTERNAL_ERROR);
  else res.destroy();
}

/**
 * Whether the whole response went out when it closes. An HTTP/2 stream reset by the client has its
 * writable side ended by Node on the way down, so there `aborted` is what tells a cut stream apart.
 */
export function responseCompleted(res: ProxyResponse): boolean {
  if (res instanceof Http2ServerResponse) return res.writableFinished && !res.stream.aborted;
  return res.writableFinished;
}
