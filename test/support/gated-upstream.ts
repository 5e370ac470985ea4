import { once } from 'node:events';
import { createServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { createTestCa } from './test-ca.js';

/**
 * An HTTPS upstream whose streamed answers are held open: each request gets its status and a first
 * SSE event at once, then waits for `release()`, or at the latest `fallbackMs`, before its last event. Tests use it to prove order: a client saw a first chunk
 * while the upstream had not finished, or many streams were open at the same time.
 */
export interface GatedUpstream {
  readonly url: string;
  readonly caCertPem: string;
  /** Requests that have started since the last reset. */
  readonly started: number;
  /** Requests open right now, and the most that were open at once since the last reset. */
  readonly open: number;
  readonly maxOpen: number;
  /** Resolves when `count` requests have started. */
  waitForStarted(count: number): Promise<void>;
  /** Lets every held request finish, and the ones that come later until the next reset. */
  release(): void;
  /** A new, shut gate and zeroed counters (held requests are released first). */
  reset(): void;
  close(): Promise<void>;
}

export interface GatedUpstreamOptions {
  /** A held request finishes after this long even if the gate stays shut (default 30 s). */
  readonly fallbackMs?: number;
}

export async function startGatedUpstream(options: GatedUpstreamOptions = {}): Promise<GatedUpstream> {
  const ca = await createTestCa('tokenproxy gated upstream CA');
  const { certPem, keyPem } = await ca.issue(['127.0.0.1']);
  const fallbackMs = options.fallbackMs ?? 30_000;
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let started = 0;
  let open = 0;
  let maxOpen = 0;
  let openGate: () => void = () => undefined;
  let gate = new Promise<void>((resolve) => (openGate = resolve));
  const waiters = new Set<() => void>();

  const server = createServer({ cert: certPem, key: keyPem, keepAlive: true }, (req, res) => {
    req.resume();
    req.on('end', () => {
      const n = started++;
      open++;
      maxOpen = Math.max(maxOpen, open);
      res.on('close', () => open--);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(`data: {"n":${n},"part":"first"}\n\n`);
      for (const wake of [...waiters]) wake();
      let timer: NodeJS.Timeout | undefined;
      const fallback = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, fallbackMs);
        timers.add(timer);
      });
      void Promise.race([gate, fallback]).then(() => {
        clearTimeout(timer);
        timers.delete(timer as NodeJS.Timeout);
        if (!res.destroyed) res.end(`data: {"n":${n},"part":"last"}\n\ndata: [DONE]\n\n`);
      });
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.on('tlsClientError', () => undefined);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `https://127.0.0.1:${port}`,
    caCertPem: ca.caCertPem,
    get started() {
      return started;
    },
    get open() {
      return open;
    },
    get maxOpen() {
      return maxOpen;
    },
    waitForStarted(count) {
      return new Promise((resolve) => {
        const check = (): void => {
          if (started < count) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    },
    release() {
      openGate();
    },
    reset() {
      openGate();
      started = 0;
      maxOpen = open;
      gate = new Promise<void>((resolve) => (openGate = resolve));
    },
    async close() {
      openGate();
      for (const t of timers) clearTimeout(t);
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await done;
    },
  };
}
