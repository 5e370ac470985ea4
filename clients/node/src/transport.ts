import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { ConnectionError, TimeoutError, certificateError } from './errors.js';

export interface TransportRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | undefined;
  readonly timeoutMs: number;
}

export interface TransportResponse {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** One HTTP exchange. Rejects with ConnectionError (or TimeoutError) when no full response arrives. */
export type Transport = (request: TransportRequest) => Promise<TransportResponse>;

export type FetchLike = (
  input: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
) => Promise<{
  status: number;
  headers: { forEach(callback: (value: string, key: string) => void): void };
  text(): Promise<string>;
}>;

/**
 * The default transport, on `node:https` rather than the global fetch: fetch takes a custom CA only
 * through an undici dispatcher, and undici would be a runtime dependency. `ca` is added to, not
 * substituted for, verification: the server certificate must still chain to it and name the host.
 */
export function nodeTransport(options: { ca?: string | Buffer | undefined }): Transport {
  // Node's `ca` replaces the default trust store; what Node trusts by default (public CAs, and
  // NODE_EXTRA_CA_CERTS) goes in beside the given one.
  const httpsAgent = new https.Agent({
    keepAlive: true,
    ...(options.ca === undefined ? {} : { ca: [...defaultCas(), options.ca] }),
  });
  const httpAgent = new http.Agent({ keepAlive: true });
  return (request) =>
    new Promise<TransportResponse>((resolve, reject) => {
      const secure = request.url.protocol === 'https:';
      const send = secure ? https.request : http.request;
      let settled = false;
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        reject(error);
      };
      const req = send(request.url, {
        method: request.method,
        headers: {
          ...request.headers,
          ...(request.body === undefined
            ? {}
            : { 'content-length': String(Buffer.byteLength(request.body)) }),
        },
        agent: secure ? httpsAgent : httpAgent,
      });
      // Covers connecting, sending and reading the whole body, so a stalled server cannot hang a call.
      const timer = setTimeout(() => {
        const error = new TimeoutError(`No complete response within ${request.timeoutMs} ms.`, {
          code: 'timeout',
        });
        fail(error);
        req.destroy(error);
      }, request.timeoutMs);
      req.on('error', (err) => {
        clearTimeout(timer);
        fail(
          err instanceof ConnectionError
            ? err
            : (certificateError(err) ??
                new ConnectionError(`Could not reach the tokenproxy API: ${err.message}`, {
                  code: 'connection_error',
                  cause: err,
                })),
        );
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (err) => req.emit('error', err));
        res.on('aborted', () => req.emit('error', new Error('the response was cut off')));
        res.on('end', () => {
          clearTimeout(timer);
          if (settled) return;
          if (!res.complete) {
            req.emit('error', new Error('the response was cut off'));
            return;
          }
          settled = true;
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) {
            if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
          }
          resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('utf8') });
        });
      });
      req.end(request.body);
    });
}

/** `tls.getCACertificates` came in Node 22.15; before it, the bundled public CAs. */
function defaultCas(): readonly string[] {
  return typeof tls.getCACertificates === 'function'
    ? tls.getCACertificates('default')
    : tls.rootCertificates;
}

/** A transport over a user-supplied `fetch` (for runtimes or proxies of your own). */
export function fetchTransport(fetchImpl: FetchLike): Transport {
  return async (request) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), request.timeoutMs);
    try {
      const res = await fetchImpl(request.url.toString(), {
        method: request.method,
        headers: { ...request.headers },
        ...(request.body === undefined ? {} : { body: request.body }),
        signal: controller.signal,
      });
      const headers: Record<string, string> = {};
      res.headers.forEach((value, key) => (headers[key.toLowerCase()] = value));
      return { status: res.status, headers, body: await res.text() };
    } catch (err) {
      if (controller.signal.aborted) {
        throw new TimeoutError(`No complete response within ${request.timeoutMs} ms.`, { code: 'timeout' });
      }
      const untrusted = certificateError(err);
      if (untrusted !== undefined) throw untrusted;
      const reason = err instanceof Error ? err.message : String(err);
      throw new ConnectionError(`Could not reach the tokenproxy API: ${reason}`, {
        code: 'connection_error',
        cause: err,
      });
    } finally {
      clearTimeout(timer);
    }
  };
}
