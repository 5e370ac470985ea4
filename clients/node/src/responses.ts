import { isPlainObject } from './case.js';
import { TokenProxyError, errorForStatus } from './errors.js';
import type { TransportResponse } from './transport.js';

export function parseJson(response: TransportResponse): unknown {
  try {
    return JSON.parse(response.body) as unknown;
  } catch {
    throw new TokenProxyError(`The API answered ${response.status} with a body that is not JSON.`, {
      status: response.status,
      code: 'invalid_response',
      requestId: response.headers['x-request-id'],
      headers: response.headers,
    });
  }
}

export function toError(response: TransportResponse): TokenProxyError {
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    body = undefined;
  }
  const error = isPlainObject(body) && isPlainObject(body.error) ? body.error : {};
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const message = str(error.message) ?? `The API answered with status ${response.status}.`;
  return errorForStatus(response.status, message, {
    code: str(error.code) ?? `http_${response.status}`,
    type: str(error.type),
    param: str(error.param),
    requestId: str(error.request_id) ?? response.headers['x-request-id'],
    headers: response.headers,
  });
}
