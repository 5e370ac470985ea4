import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What a route handler gets for one request whose body has been read in full. */
export interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  body: Buffer;
  chunks: number;
  gapMs: number;
  tcpSockets(): Socket[];
  /** Aborted when the client goes away or the server closes, so pending waits end instead of leaking timers. */
  signal: AbortSignal;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = Buffer.from(JSON.stringify(value));
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(payload.length),
    ...headers,
  });
  res.end(payload);
}

function errorType(status: number): string {
  const types: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    500: 'api_error',
    503: 'overloaded_error',
    529: 'overloaded_error',
  };
  return types[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  // Both the OpenAI and the Anthropic SDK read `error.message` from this shape.
  sendJson(res, status, { error: { message, type: errorType(status) } }, headers);
}

export function parseJsonObject(body: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export function intParam(
  value: string | null | undefined,
  fallback: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === null || value === undefined || value === '') return fallback;
  const n = Number(value);
  return Number.isInteger(n) && n >= 0 ? Math.min(n, max) : fallback;
}

export function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Resolves once `chunk` is handed to the socket, so an SSE event really leaves before the next wait. */
export function write(res: ServerResponse, chunk: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    res.write(chunk, (err) => (err ? reject(err) : resolve()));
  });
}

export function startSse(res: ServerResponse, headers: Record<string, string> = {}): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    ...headers,
  });
  res.flushHeaders();
}
