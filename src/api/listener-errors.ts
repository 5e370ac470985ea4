import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { TokenProxyError } from '../errors/tokenproxy-error.js';
import { newRequestId } from '../ids/formats.js';
import { sendError } from './error-handler.js';

/**
 * Errors Fastify raises before a route runs (`frameworkErrors`): a percent-encoding that does not
 * decode, a path parameter over the router's length limit. Their default bodies are Fastify's own
 * shape; ours is the one error body with a request id. The path is not echoed: it may hold an id.
 */
export function frameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  void sendError(request, reply, frameworkTokenProxyError(err));
}

export function frameworkTokenProxyError(err: { code?: string | undefined }): TokenProxyError {
  switch (err.code) {
    case 'FST_ERR_BAD_URL':
      return new TokenProxyError(
        'invalid_parameter',
        'The URL path holds an invalid percent-encoding (such as "%zz"). Encode "%" as "%25".',
        { param: 'path' },
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new TokenProxyError(
        'invalid_parameter',
        'A path parameter is longer than 100 characters; no tokenproxy id is. Check the URL.',
        { param: 'path' },
      );
    default:
      return new TokenProxyError(
        'internal_error',
        'Internal error. The request id identifies it in the server log.',
      );
  }
}

/** Node's HTTP parser errors (`clientError`), by the status we answer with. */
export function clientErrorAnswer(code: string | undefined): TokenProxyError {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new TokenProxyError(
      'headers_too_large',
      'The request headers are larger than the server accepts (16 KB). Send fewer or shorter headers.',
    );
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new TokenProxyError('request_timeout', 'The request was not received in time. Send it again.');
  }
  return new TokenProxyError(
    'malformed_request',
    'The HTTP request is malformed (for example both Content-Length and Transfer-Encoding, or an invalid header). Send a well-formed HTTP/1.1 request.',
  );
}

/**
 * The server's `clientError` handler: the request never reached Fastify, so the answer is written
 * to the socket here, in the one error shape, and the connection closed (its framing is unknown).
 * Logged at info with the parser's code only: the error's `rawPacket` holds request bytes.
 */
export function clientErrorHandler(log: FastifyBaseLogger) {
  return (err: Error & { code?: string }, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) {
      socket.destroy();
      return;
    }
    const error = clientErrorAnswer(err.code);
    const requestId = newRequestId(Date.now());
    log.info({ request_id: requestId, code: err.code ?? 'unknown', status: error.status }, 'client error');
    if (socket.writable) {
      const body = JSON.stringify({
        error: { type: error.type, code: error.code, message: error.message, request_id: requestId },
      });
      socket.write(
        `HTTP/1.1 ${error.status} ${STATUS_TEXT[error.status] ?? 'Error'}\r\n` +
          'content-type: application/json; charset=utf-8\r\n' +
          `content-length: ${Buffer.byteLength(body)}\r\n` +
          `x-request-id: ${requestId}\r\n` +
          'connection: close\r\n\r\n' +
          body,
      );
    }
    socket.end();
  };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

/**
 * A client that went away before its request was read (closed mid-body): nothing to answer and
 * nothing wrong with the server, so it is an info line, not an internal error with a stack.
 */
export function isClientAbort(err: unknown, request: FastifyRequest): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ECONNRESET' || code === 'ECONNABORTED' || code === 'ERR_STREAM_PREMATURE_CLOSE') return true;
  return request.raw.destroyed && !request.raw.complete;
}
