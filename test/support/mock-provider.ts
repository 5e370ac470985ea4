import { once } from 'node:events';
import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createRequestLog, type ReceivedRequest } from './mock-provider/received.js';
import { headerValue, intParam } from './mock-provider/respond.js';
import { answer } from './mock-provider/routes.js';
import { createTestCa } from './test-ca.js';

export {
  MOCK_ANTHROPIC_MODEL,
  MOCK_CHAT_MODEL,
  MOCK_COMPLETION_TEXT,
  mockBigByte,
  mockStreamPiece,
  mockStreamText,
} from './mock-provider/canned.js';
export { MOCK_COMPRESSIONS, MOCK_KEY_ENCODINGS, compressedEchoText } from './mock-provider/echo.js';
export type { ReceivedRequest } from './mock-provider/received.js';
export { MOCK_USAGE_ANSWERS, type MockUsageAnswer } from './mock-provider/usage-answers.js';

export interface MockProviderOptions {
  /** Number of streamed content chunks (SSE events) per streaming answer; request header `x-mock-chunks` wins. */
  chunks?: number;
  /** Delay between streamed chunks; request header `x-mock-gap-ms` wins. */
  gapMs?: number;
}

export interface MockProvider {
  /** `https://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  port: number;
  caCertPem: string;
  received: ReceivedRequest[];
  /** Forgets recorded requests (the array is emptied in place, so references stay valid). */
  reset(): void;
  /** Resolves once at least `count` requests have been recorded since the last reset. */
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Stops the server and destroys every socket, including ones mid-stream. Idempotent. */
  close(): Promise<void>;
}

const DEFAULT_CHUNKS = 5;
const DEFAULT_GAP_MS = 50;

export async function startMockProvider(options: MockProviderOptions = {}): Promise<MockProvider> {
  const defaultChunks = options.chunks ?? DEFAULT_CHUNKS;
  const defaultGapMs = options.gapMs ?? DEFAULT_GAP_MS;

  const ca = await createTestCa('tokenproxy mock provider CA');
  const { certPem, keyPem } = await ca.issue(['localhost', '127.0.0.1']);

  const log = createRequestLog();
  const sockets = new Set<Socket>();
  const shutdown = new AbortController();

  const server = createServer({ cert: certPem, key: keyPem, minVersion: 'TLSv1.2', keepAlive: true });
  // Raw TCP sockets, tracked from accept: this also covers connections still in the TLS handshake, which
  // `closeAllConnections()` would not see.
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // TLS handshake failures (e.g. a client that does not trust the CA) are expected in tests, not crashes.
  server.on('tlsClientError', () => undefined);

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const receivedAt = Date.now();
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('error', () => undefined);
    req.on('end', () => {
      const record: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(pieces),
        receivedAt,
      };
      log.add(record);
      void dispatch(req, res, record.body);
    });
  });

  function dispatch(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const clientGone = new AbortController();
    res.on('close', () => clientGone.abort());
    return answer({
      req,
      res,
      url: new URL(req.url ?? '/', 'https://127.0.0.1'),
      body,
      chunks: intParam(headerValue(req, 'x-mock-chunks'), defaultChunks, 10_000),
      gapMs: intParam(headerValue(req, 'x-mock-gap-ms'), defaultGapMs, 60_000),
      signal: AbortSignal.any([clientGone.signal, shutdown.signal]),
      tcpSockets: () => [...sockets],
    });
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;

  return {
    url: `https://127.0.0.1:${port}`,
    port,
    caCertPem: ca.caCertPem,
    received: log.received,
    reset: () => log.reset(),
    waitForRequests: (count, timeoutMs) => log.waitForRequests(count, timeoutMs),
    close(): Promise<void> {
      closing ??= (async () => {
        shutdown.abort();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        await closed;
      })();
      return closing;
    },
  };
}
