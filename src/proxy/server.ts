import { createServer as createHttpServer, type Server as HttpServer, type ServerOptions } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { ProxyDeps } from './deps.js';
import { ProxyHandler } from './handler.js';

export interface ProxyServerOptions {
  /** PEM certificate and key; omitted for plain HTTP (`insecure_http`, behind a TLS-terminating LB). */
  readonly tls?: { readonly key: string; readonly cert: string } | undefined;
}

export interface ProxyServer {
  readonly server: HttpServer;
  /** Resolves to the bound port. */
  listen(host: string, port: number): Promise<number>;
  /** Forgets cached token lookups, so a revoke or key change applies to the very next request. */
  invalidateCredentials(): void;
  /**
   * Stops accepting, lets in-flight requests and streams finish for up to `drainMs`, then closes
   * what is left; upstream pools are closed last.
   */
  close(drainMs: number): Promise<void>;
}

/** Headers larger than this are answered 431 by Node's parser, before any of our code runs. */
export const MAX_HEADER_BYTES = 16 * 1024;

const HTTP_OPTIONS: ServerOptions = {
  maxHeaderSize: MAX_HEADER_BYTES,
  // Slow-loris: the whole head must arrive in 20 s; a whole request (uploads included) in 10 min.
  headersTimeout: 20_000,
  requestTimeout: 10 * 60_000,
  // Longer than the 60 s idle timeout of common load balancers, so they never reuse a closing socket.
  keepAliveTimeout: 65_000,
  noDelay: true,
};

/**
 * The proxy listener: HTTP/1.1 over TLS 1.3 (ALPN offers http/1.1 only), no framework. Request and
 * response bodies are streamed through; nothing is parsed beyond the request head.
 */
export function createProxyServer(deps: ProxyDeps, options: ProxyServerOptions = {}): ProxyServer {
  const handler = new ProxyHandler(deps);
  const server: HttpServer = options.tls
    ? createHttpsServer(
        {
          ...HTTP_OPTIONS,
          key: options.tls.key,
          cert: options.tls.cert,
          minVersion: 'TLSv1.3',
          ALPNProtocols: ['http/1.1'],
        },
        handler.handle,
      )
    : createHttpServer(HTTP_OPTIONS, handler.handle);

  // Raw sockets from accept, so a drain timeout also ends connections still in the TLS handshake.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('tlsClientError', () => undefined);

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
    close(drainMs) {
      closing ??= (async () => {
        handler.closing = true;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        // Responses finishing from now on say `Connection: close` (see handle); this sweeps the
        // keep-alive sockets they leave idle in between.
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        const deadline = setTimeout(() => {
          server.closeAllConnections();
          for (const socket of sockets) socket.destroy();
        }, drainMs);
        try {
          await closed;
        } finally {
          clearInterval(sweep);
          clearTimeout(deadline);
        }
        await handler.upstreams.close(1000);
      })();
      return closing;
    },
  };
}
