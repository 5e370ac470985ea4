import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { H2Request, H2Response } from './h2-stream.js';

/**
 * A request and its response, whichever protocol carried them: node:http's IncomingMessage and
 * ServerResponse (HTTP/1.1), or an HTTP/2 stream (h2-stream.ts). The request flow is written once
 * for both; the few places where the protocols differ are the functions below.
 */
export type ProxyRequest = IncomingMessage | H2Request;
export type ProxyResponse = ServerResponse | H2Response;

/**
 * Whether a request carries a body. HTTP/1.1 says so in its framing headers; HTTP/2 has no
 * `transfer-encoding` and `content-length` is optional, so there the HEADERS frame's END_STREAM flag
 * is the answer (no flag: DATA frames follow).
 */
export function requestHasBody(req: ProxyRequest): boolean {
  if (req instanceof H2Request) return !req.stream.endAfterHeaders;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The body to read whole, without handing it on: on HTTP/2 the stream itself. */
export function bodyToRead(req: ProxyRequest): Readable {
  return req instanceof H2Request ? req.stream : req;
}

/**
 * The body to hand on to undici or the budget peek, which may destroy it: on HTTP/2 a stream of its
 * own (H2RequestBody), so that destroying it leaves the client's answer alone.
 */
export function bodyToForward(req: ProxyRequest): Readable {
  return req instanceof H2Request ? req.body : req;
}

/** Sends the status and headers (flat `[name, value, …]`). */
export function sendHead(res: ProxyResponse, status: number, headers: string[]): void {
  if (res instanceof H2Response) res.respond(status, headers);
  else res.writeHead(status, headers);
}

/** Whether the whole response went out when it closes (HTTP/2: and the client did not reset it). */
export function responseCompleted(res: ProxyResponse): boolean {
  return res instanceof H2Response ? res.completed : res.writableFinished;
}
