import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { newRequestId } from '../ids/formats.js';
import { responseStarted } from '../runtime/http1-socket.js';
import { TokenProxyError } from './tokenproxy-error.js';

/**
 * The sentences of the refusals Node's HTTP/1.1 parser makes before any of our code runs. HTTP/2
 * streams are refused with the same codes and words (src/proxy/errors.ts takes them from here).
 */
export const CLIENT_ERROR_MESSAGES = {
  headers_too_large:
    'The request headers are larger than the server accepts (16 KB). Send fewer or shorter headers.',
  request_timeout: 'The request was not received in time. Send it again.',
  malformed_request:
    'The HTTP request is malformed (for example both Content-Length and Transfer-Encoding, or an invalid header). Send a well-formed HTTP/1.1 request.',
} as const;

/**
 * Requests Node's HTTP/1.1 parser refuses before any of our code runs (`clientError`): a head over
 * the size limit, one that does not parse, one that does not arrive in time. Node's own answer is a
 * bare status line; both listeners answer in their one error shape instead, with a request id.
 */
export function clientErrorAnswer(code: string | undefined): TokenProxyError {
  const ours =
    code === 'HPE_HEADER_OVERFLOW'
      ? 'headers_too_large'
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'request_timeout'
        : 'malformed_request';
  return new TokenProxyError(ours, CLIENT_ERROR_MESSAGES[ours]);
}

/**
 * Nothing to answer: a client that reset the connection, a socket already gone, one whose request
 * is already being answered (a body that breaks its chunked framing after the head was accepted):
 * another status line in the middle of that answer would corrupt it, so the connection is only
 * closed. Nor a TLS connection whose handshake failed or timed out (Node hands those to
 * `clientError` too): an answer written to it waits for a handshake that never comes, and the socket
 * with it, a file descriptor held for good by anyone who opens a connection and sends nothing.
 */
function needsNoAnswer(err: { code?: string | undefined }, socket: Socket): boolean {
  return (
    err.code === 'ECONNRESET' ||
    socket.destroyed ||
    responseStarted(socket) ||
    (err.code !== undefined && TLS_FAILURE.test(err.code))
  );
}

/** Node's TLS errors (`ERR_TLS_HANDSHAKE_TIMEOUT`) and OpenSSL's (`ERR_SSL_WRONG_VERSION_NUMBER`). */
const TLS_FAILURE = /^ERR_(TLS|SSL)_/;

/** An error answer's socket is destroyed this long after it, sent or not: a peer that reads nothing
 * must not keep it open. */
const ANSWER_LINGER_MS = 5000;

/**
 * Writes the answer to a request that never became one, and closes the connection: after a parse
 * error its framing is unknown, so nothing more can be read from it. Destroyed once the answer is
 * out, not only ended: the parser repeats its error on every later chunk, and a timed-out one stays
 * on the server's list of connections to check, so a half-closed socket would log again and again.
 * `headers`: `name: value` lines besides the content's and `x-request-id`.
 */
function writeClientError(
  socket: Socket,
  status: number,
  requestId: string,
  body: string,
  headers: readonly string[] = [],
): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.write(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      'x-content-type-options: nosniff\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${requestId}\r\n` +
      headers.map((line) => `${line}\r\n`).join('') +
      'connection: close\r\n\r\n' +
      body,
  );
  socket.destroySoon();
  setTimeout(() => socket.destroy(), ANSWER_LINGER_MS).unref();
}

export interface ClientErrorLog {
  info(fields: object, message: string): void;
}

/** A listener's own error shape: the body, and `name: value` header lines beyond `x-request-id`. */
export type ClientErrorShape = (
  error: TokenProxyError,
  requestId: string,
) => { readonly body: string; readonly headers?: readonly string[] };

/**
 * A server's `clientError` handler: the request never reached our code, so the answer is written to
 * the socket here, in the listener's error shape, and the connection closed (its framing is
 * unknown). Logged at info with the parser's code only: the error's `rawPacket` holds request bytes.
 */
export function answerClientErrors(log: ClientErrorLog | undefined, shape: ClientErrorShape) {
  return (err: Error & { code?: string }, socket: Socket): void => {
    if (needsNoAnswer(err, socket)) {
      socket.destroy();
      return;
    }
    const error = clientErrorAnswer(err.code);
    const requestId = newRequestId(Date.now());
    log?.info({ request_id: requestId, code: err.code ?? 'unknown', status: error.status }, 'client error');
    const { body, headers } = shape(error, requestId);
    writeClientError(socket, error.status, requestId, body, headers);
  };
}
