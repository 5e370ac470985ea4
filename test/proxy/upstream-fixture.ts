import { once } from 'node:events';
import { createServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { createTestCa } from '../support/test-ca.js';

/**
 * A second, scriptable HTTPS upstream for what the shared mock cannot do: echo the real key split
 * across timed chunks, reset the connection before answering (`/reset`), and report when a hanging
 * request's connection is closed by the proxy. Its CA is its own: trusted only when a test adds it.
 */
export interface ScriptedUpstream {
  readonly url: string;
  readonly caCertPem: string;
  /** Resolves when the request to `/hang` has had its connection closed. */
  hangClosed(): Promise<void>;
  readonly hangStarted: Promise<void>;
  close(): Promise<void>;
}

export async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  const ca = await createTestCa('tokenproxy scripted upstream CA');
  const { certPem, keyPem } = await ca.issue(['127.0.0.1']);
  const sockets = new Set<Socket>();
  let markStarted: () => void = () => undefined;
  const hangStarted = new Promise<void>((resolve) => (markStarted = resolve));
  let markClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));

  const server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
    const path = req.url ?? '';
    if (path.startsWith('/split')) {
      // The key the proxy sent, echoed back split at `at` across two writes 150 ms apart.
      const auth = req.headers.authorization ?? '';
      const key = auth.slice('Bearer '.length);
      const at = Number(new URL(path, 'https://x').searchParams.get('at') ?? '5');
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: first ${key.slice(0, at)}`);
      setTimeout(() => {
        res.end(`${key.slice(at)} last\n\n`);
      }, 150);
      return;
    }
    if (path.startsWith('/reset')) {
      // A TCP reset before any answer: the RST goes out on the raw socket under the TLS one.
      const raw = [...sockets].find((s) => s.remotePort === req.socket.remotePort);
      if (raw) raw.resetAndDestroy();
      else req.socket.destroy();
      return;
    }
    if (path.startsWith('/hang')) {
      res.on('close', () => markClosed());
      markStarted();
      return;
    }
    res.writeHead(404);
    res.end();
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    caCertPem: ca.caCertPem,
    hangClosed: () => closed,
    hangStarted,
    async close() {
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await done;
    },
  };
}
