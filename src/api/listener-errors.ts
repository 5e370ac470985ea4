import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { TokenProxyError } from '../errors/tokenproxy-error.js';
import { apiErrorBody, sendError } from './error-handler.js';
import { answerClientErrors } from '../errors/client-error.js';

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

/** The management listener's `clientError` handler: the API's error shape. */
export function clientErrorHandler(
  log: FastifyBaseLogger,
): (err: Error & { code?: string }, socket: Socket) => void {
  return answerClientErrors(log, (error, requestId) => ({
    body: JSON.stringify(apiErrorBody(error, requestId)),
  }));
}

/**
 * A client that went away before its request was read (closed mid-body): nothing to answer and
 * nothing wrong with the server, so it is an info line, not an internal error with a stack.
 */
export function isClientAbort(err: unknown, request: FastifyRequest): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ECONNRESET' || code === 'ECONNABORTED' || code === 'ERR_STREAM_PREMATURE_CLOSE') return true;
  return request.raw.destroyed && !request.raw.complete;
}
