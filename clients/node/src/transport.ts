import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
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
 * How long an idle kept-alive socket waits for the next call. Below the 72 s the management
 * listener keeps one (Fastify's keepAliveTimeout, announced as `Keep-Alive: timeout=72`) and the
 * 60 s of common load balancers, so the client lets go first. Node's agent takes a shorter announced
 * timeout (less a second) only when it has a timeout of its own: without one it kept idle sockets
 * until the server closed them, and a call could be sent on one just as that happened.
 */
export const IDLE_SOCKET_TIMEOUT_MS = 30_000;

/**
 * Methods this API lets a client repeat without an Idempotency-Key: GET reads, and every PATCH sets
 * absolute values (the server takes a key on POST and DELETE only). The Python client's rule.
 */
const REPEATABLE = new Set(['GET', 'HEAD', 'OPTIONS', 'PATCH']);

/** How a kept socket the server closed while idle fails: on writing (EPIPE) or awaiting the answer. */
const STALE_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

type Agent = http.Agent | https.Agent;

/** An exchange's end: an answer, or an error, `stale` when it was a kept socket closed unanswered. */
type Outcome = { readonly response: TransportResponse } | { readonly error: Error; readonly stale: boolean };

/**
 * The default transport, on `node:https` rather than the global fetch: fetch takes a custom CA only
 * through an undici dispatcher, and undici would be a runtime dependency. `ca` is added to, not
 * substituted for, verification: the server certificate must still chain to it and name the host.
 *
 * A kept socket that fails before any byte of an answer arrived was closed by the server while it
 * sat idle (its keep-alive timeout, a restart), however short the client's own idle timeout: the
 * close may cross the call on the wire. A repeatable call (see `repeatable`; every call the client
 * makes is one) is then sent once more on a fresh connection, at once, within the same timeout and
 * outside `maxRetries`. It is not always true that the server never saw it, hence only those.
 */
export function nodeTransport(options: {
  ca?: string | Buffer | undefined;
  /** IDLE_SOCKET_TIMEOUT_MS unless a test shortens it. */
  idleTimeoutMs?: number | undefined;
}): Transport {
  const timeout = options.idleTimeoutMs ?? IDLE_SOCKET_TIMEOUT_MS;
  // Node's `ca` replaces the default trust store; what Node trusts by default (public CAs, and
  // NODE_EXTRA_CA_CERTS) goes in beside the given one.
  const httpsAgent = new https.Agent({
    keepAlive: true,
    timeout,
    ...(options.ca === undefined ? {} : { ca: [...defaultCas(), options.ca] }),
  });
  const httpAgent = new http.Agent({ keepAlive: true, timeout });
  return async (request) => {
    const agent = request.url.protocol === 'https:' ? httpsAgent : httpAgent;
    // Both sends share the attempt's deadline; monotonic, so a clock step does not move it.
    const deadline = performance.now() + request.timeoutMs;
    let outcome = await exchange(request, agent, deadline);
    if ('error' in outcome && outcome.stale && repeatable(request)) {
      // The agent hands out its most recently used socket first: the other idle ones waited at
      // least as long as the one the server closed, so they go too, and the repeat goes on a new
      // connection (or on one a concurrent call has just finished with).
      dropIdleSockets(agent);
      outcome = await exchange(request, agent, deadline);
    }
    if ('error' in outcome) throw outcome.error;
    return outcome.response;
  };
}

/** Sending it twice does what sending it once does (a keyed POST or DELETE: the server replays). */
function repeatable(request: TransportRequest): boolean {
  return (
    REPEATABLE.has(request.method.toUpperCase()) ||
    Object.keys(request.headers).some((name) => name.toLowerCase() === 'idempotency-key')
  );
}

function dropIdleSockets(agent: Agent): void {
  for (const sockets of Object.values(agent.freeSockets)) {
    for (const socket of sockets ?? []) socket.destroy();
  }
}

/** One HTTP exchange on whatever socket the agent gives; never rejects. */
function exchange(request: TransportRequest, agent: Agent, deadline: number): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    const send = request.url.protocol === 'https:' ? https.request : http.request;
    let settled = false;
    const fail = (error: Error, stale = false) => {
      if (settled) return;
      settled = true;
      resolve({ error, stale });
    };
    const req = send(request.url, {
      method: request.method,
      headers: {
        ...request.headers,
        ...(request.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(request.body)) }),
      },
      agent,
    });
    // What the socket had read before this request: more at the failure means an answer had begun,
    // and a call that was answered, however badly, is not a closed idle socket.
    let socket: Socket | undefined;
    let readBefore = 0;
    req.on('socket', (s) => {
      socket = s;
      readBefore = s.bytesRead;
    });
    // Covers connecting, sending and reading the whole body, so a stalled server cannot hang a call.
    const timer = setTimeout(
      () => {
        const error = new TimeoutError(`No complete response within ${request.timeoutMs} ms.`, {
          code: 'timeout',
        });
        fail(error);
        req.destroy(error);
      },
      Math.max(0, deadline - performance.now()),
    );
    req.on('error', (err) => {
      clearTimeout(timer);
      const unanswered = socket === undefined || socket.bytesRead === readBefore;
      const stale = req.reusedSocket && unanswered && STALE_CODES.has(errorCode(err) ?? '');
      fail(
        err instanceof ConnectionError
          ? err
          : (certificateError(err) ??
              new ConnectionError(`Could not reach the tokenproxy API: ${err.message}`, {
                code: 'connection_error',
                cause: err,
              })),
        stale,
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
        resolve({
          response: { status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('utf8') },
        });
      });
    });
    req.end(request.body);
  });
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
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
