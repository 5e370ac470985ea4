import { HEAD_TIMEOUT_MS, REQUEST_TIMEOUT_MS, timeoutCheckIntervalMs } from '../runtime/request-timeouts.js';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type SecureServerOptions,
  type ServerHttp2Session,
} from 'node:http2';
import type { AddressInfo, Server, Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { answerClientErrors } from '../errors/client-error.js';
import { TLS_HANDSHAKE_TIMEOUT_MS } from '../tls/handshake.js';
import { MAX_HEADER_BYTES } from './header-limit.js';
import { responseInFlight } from '../runtime/http1-socket.js';
import type { ProxyDeps } from './deps.js';
import { isNotRetried, proxyErrorBody } from './errors.js';
import { serveStream, type H2Peer } from './h2-stream.js';
import { ProxyHandler } from './handler.js';
import { capConnections, warnIfOvercommitted } from '../runtime/connection-cap.js';

export interface ProxyServerOptions {
  /** PEM certificate and key; omitted for plain HTTP (`insecure_http`, behind a TLS-terminating LB). */
  readonly tls?: { readonly key: string; readonly cert: string } | undefined;
  /** Offer HTTP/2 by ALPN beside HTTP/1.1 on the TLS listener (default true; false: HTTP/1.1 only). */
  readonly http2?: boolean | undefined;
  /**
   * How long a connection may be idle (default 65 s; shorter in tests): an HTTP/2 session is then
   * asked to go away, an HTTP/1.1 one with no answer in flight is closed.
   */
  readonly idleTimeoutMs?: number | undefined;
  /** The time a whole request (its body included) gets over HTTP/2; 10 min unless a test shortens it. */
  readonly requestTimeoutMs?: number | undefined;
  /** The TLS handshake's time limit; TLS_HANDSHAKE_TIMEOUT_MS unless a test shortens it. */
  readonly handshakeTimeoutMs?: number | undefined;
}

export interface ProxyServer {
  readonly server: Server;
  /** Resolves to the bound port. */
  listen(host: string, port: number): Promise<number>;
  /** Forgets cached token lookups, so a revoke or key change applies to the very next request. */
  invalidateCredentials(): void;
  /** Requests received since start (every one, refused or not). */
  requests(): number;
  /** Requests whose response is not over yet (streams included). */
  inFlight(): number;
  /**
   * Stops accepting, lets in-flight requests and streams finish for up to `drainMs`, then closes
   * what is left; upstream pools are closed last.
   */
  close(drainMs: number): Promise<void>;
}

export { MAX_HEADER_BYTES } from './header-limit.js';

/** Idle connections (HTTP/1.1 keep-alive, HTTP/2 sessions) are closed after this long. */
const IDLE_TIMEOUT_MS = 65_000;

const HTTP_OPTIONS: ServerOptions = {
  maxHeaderSize: MAX_HEADER_BYTES,
  headersTimeout: HEAD_TIMEOUT_MS,
  requestTimeout: REQUEST_TIMEOUT_MS,
  // Longer than the 60 s idle timeout of common load balancers, so they never reuse a closing socket.
  keepAliveTimeout: IDLE_TIMEOUT_MS,
  connectionsCheckingInterval: timeoutCheckIntervalMs(HEAD_TIMEOUT_MS),
  // The proxy routes by path and never reads Host: a request without one is served (and refused in
  // the proxy's own shape when it must be), not answered with Node's bare 400.
  requireHostHeader: false,
  noDelay: true,
};

/**
 * HTTP/2 limits and flow-control windows (docs/decisions.md). A stream window is what a client may
 * send us unread on one stream, the session window on all its streams together: they bound the
 * memory a connection can pin while a request body waits for the upstream, and are large enough
 * that a streamed upload is not throttled to a window per round trip.
 */
export const H2_STREAM_WINDOW = 1024 * 1024;
export const H2_SESSION_WINDOW = 8 * 1024 * 1024;
export const H2_MAX_STREAMS = 128;
/** Rapid reset (CVE-2023-44487): streams a client may open and cancel at once, then per second. */
export const H2_RESET_BURST = 1000;
export const H2_RESET_RATE = 33;

const H2_OPTIONS: SecureServerOptions = {
  allowHTTP1: true,
  settings: {
    maxConcurrentStreams: H2_MAX_STREAMS,
    initialWindowSize: H2_STREAM_WINDOW,
    // HPACK-decoded size (names + values + 32 per field). The HTTP/1.1 head limit is checked on every
    // stream (h2-stream.ts), with the same 431 answer; nghttp2's own refusal (a bare stream reset,
    // and only for clients that acknowledged the setting) is kept for lists far past it.
    maxHeaderListSize: 4 * MAX_HEADER_BYTES,
    enablePush: false,
  },
  // Past the reset burst nghttp2 stops handing the session's new streams to us. A client that opens
  // more than maxConcurrentStreams gets REFUSED_STREAM for the extra ones (the session goes on);
  // maxSessionRejectedStreams counts streams Node itself rejects, not those.
  streamResetBurst: H2_RESET_BURST,
  streamResetRate: H2_RESET_RATE,
  maxSessionRejectedStreams: 100,
  maxSessionInvalidFrames: 1000,
};

/**
 * Takes HTTP/1.1 requests of an HTTP/2 server's `request` event, and leaves its HTTP/2 streams to the
 * sessions' `stream` event (serveStream). A `request` listener is how `allowHTTP1` hands HTTP/1.1
 * requests over, but adding one also makes Node serve every HTTP/2 stream through its compatibility
 * layer, by a `stream` listener of its own: that listener is taken off again here. Should a Node
 * version serve HTTP/2 requests to `request` some other way, they are ignored there, never answered
 * twice.
 */
function serveHttp1Only(
  server: Http2SecureServer,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): void {
  const before = new Set(server.listeners('stream'));
  server.on(
    'request',
    (req: Http2ServerRequest | IncomingMessage, res: Http2ServerResponse | ServerResponse) => {
      if (req.httpVersionMajor === 1) handle(req as IncomingMessage, res as ServerResponse);
    },
  );
  for (const listener of server.listeners('stream')) {
    if (!before.has(listener)) server.off('stream', listener as (...args: unknown[]) => void);
  }
}

function offerHttp1Only({ protocols }: { protocols: string[] }): string | undefined {
  return protocols.includes('http/1.1') ? 'http/1.1' : undefined;
}

/**
 * The proxy listener, no framework. With TLS (1.3 only) it speaks HTTP/2 and HTTP/1.1 on one port,
 * chosen by ALPN (`h2`, `http/1.1`): HTTP/1.1 requests come as node:http's, HTTP/2 ones as streams
 * (h2-stream.ts), and one request handler serves both; plain HTTP (`insecure_http`) is HTTP/1.1
 * only. Request and response bodies are streamed through; nothing is parsed beyond the request head.
 * Upstream is HTTP/1.1 keep-alive pools.
 */
export function createProxyServer(deps: ProxyDeps, options: ProxyServerOptions = {}): ProxyServer {
  const handler = new ProxyHandler(deps);
  const sessions = new Set<ServerHttp2Session>();
  let server: Server;
  if (options.tls) {
    const h2 = createSecureServer({
      ...HTTP_OPTIONS,
      ...H2_OPTIONS,
      // Node sets ALPNProtocols itself for an HTTP/2 server; a callback is the way to offer less.
      ...(options.http2 === false ? { ALPNCallback: offerHttp1Only } : {}),
      key: options.tls.key,
      cert: options.tls.cert,
      minVersion: 'TLSv1.3',
      handshakeTimeout: options.handshakeTimeoutMs ?? TLS_HANDSHAKE_TIMEOUT_MS,
    });
    serveHttp1Only(h2, handler.handle);
    const requestTimeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    h2.on('session', (session: ServerHttp2Session) => {
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
      // The session window starts at 64 KiB whatever SETTINGS say; widen it as soon as it exists.
      session.setLocalWindowSize(H2_SESSION_WINDOW);
      const peer: H2Peer = { remoteAddress: session.socket.remoteAddress };
      session.on('stream', (stream, headers, _flags, rawHeaders) =>
        serveStream(handler.handle, stream, headers, rawHeaders, peer, requestTimeoutMs),
      );
    });
    // An idle session is asked to go away; its open streams (a long completion) still finish.
    const idleMs = options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
    h2.setTimeout(idleMs);
    // With allowHTTP1, Node runs HTTP/1.1 sockets with the instance's own timeouts, which Node 22
    // does not take from the options (headers 60 s, request 300 s, no keep-alive limit at all).
    // Node's http2 types do not list them; its HTTP/1.1 code reads them off the server instance.
    const http1 = h2 as Http2SecureServer & {
      headersTimeout: number;
      requestTimeout: number;
      keepAliveTimeout: number;
      requireHostHeader: boolean;
      connectionsCheckingInterval: number;
    };
    http1.headersTimeout = HEAD_TIMEOUT_MS;
    http1.requestTimeout = REQUEST_TIMEOUT_MS;
    http1.keepAliveTimeout = idleMs;
    http1.requireHostHeader = HTTP_OPTIONS.requireHostHeader ?? false;
    http1.connectionsCheckingInterval = timeoutCheckIntervalMs(HEAD_TIMEOUT_MS);
    h2.on('timeout', (peer: ServerHttp2Session | TLSSocket) => {
      // Node reports HTTP/1.1 sockets here too (the keep-alive limit and this idle time), and a
      // listener means it leaves them to us: one idle between requests is closed; one whose answer
      // is still coming (a long completion) is left to the upstream timeouts.
      if (peer instanceof TLSSocket) {
        if (!responseInFlight(peer)) peer.destroy();
        return;
      }
      peer.close();
    });
    // A peer that breaks the protocol is destroyed by Node; nothing of ours to report.
    h2.on('sessionError', () => undefined);
    server = h2;
  } else {
    server = createHttpServer(HTTP_OPTIONS, (req, res) => handler.handle(req, res));
  }
  const closeIdle = (): void => (server as Server & { closeIdleConnections(): void }).closeIdleConnections();

  // Raw sockets from accept, so a drain timeout also ends connections still in the TLS handshake.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const limits = deps.config.connections;
  capConnections(server, limits.proxy, handler.descriptors, deps.logger, () =>
    deps.metrics.connectionRefused?.(),
  );
  warnIfOvercommitted(deps.logger, limits);
  deps.metrics.watchConnections?.(() => sockets.size, limits.proxy);
  server.on('tlsClientError', () => undefined);
  // HTTP/1.1 requests Node's parser refuses (too large a head, no valid framing): answered in the
  // proxy's error shape, as every other refusal, instead of Node's bare status line.
  server.on(
    'clientError',
    answerClientErrors(deps.logger, (error, requestId) => ({
      body: proxyErrorBody(error.code, error.message, requestId),
      headers: [
        `request-id: ${requestId}`,
        `x-tokenproxy-request-id: ${requestId}`,
        'cache-control: no-store',
        ...(isNotRetried(error.code) ? ['x-should-retry: false'] : []),
      ],
    })),
  );

  let closing: Promise<void> | undefined;
  return {
    server,
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host, port }, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    invalidateCredentials() {
      handler.invalidateCredentials();
    },
    requests: () => handler.requests,
    inFlight: () => handler.inFlight,
    close(drainMs) {
      closing ??= (async () => {
        handler.closing = true;
        // HTTP/2 sessions get GOAWAY here (server.close closes them gracefully: open streams finish).
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        closeIdle();
        // HTTP/1.1 responses finishing from now on say `Connection: close` (see handle); this sweeps
        // the keep-alive sockets they leave idle in between.
        const sweep = setInterval(closeIdle, 50);
        const deadline = setTimeout(() => {
          for (const session of sessions) session.destroy();
          for (const socket of sockets) socket.destroy();
        }, drainMs);
        try {
          await closed;
        } finally {
          clearInterval(sweep);
          clearTimeout(deadline);
        }
        // Refusals counted since the last line would otherwise go unsaid.
        handler.descriptors.flush();
        await handler.upstreams.close(1000);
      })();
      return closing;
    },
  };
}
