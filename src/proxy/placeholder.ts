import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBase58 } from '../ids/base58.js';

/**
 * Until the proxy lands, the proxy listener answers every request with a 404 in the proxy's error
 * shape, so a caller sees a clear message rather than a closed port.
 */
export function placeholderProxyHandler(_req: IncomingMessage, res: ServerResponse): void {
  const requestId = `req_${randomBase58(22)}`;
  const body = JSON.stringify({
    error: {
      type: 'tokenproxy_error',
      code: 'route_not_found',
      message: 'This tokenproxy build does not forward provider requests yet.',
      request_id: requestId,
    },
  });
  res.writeHead(404, { 'content-type': 'application/json', 'x-request-id': requestId });
  res.end(body);
}
