/**
 * The bench's reference forwarder: the least a Node.js credential proxy can do, and nothing else.
 * `node:https` server → one undici Pool to the stand-in, the caller's Authorization swapped for a
 * fixed key, the answer streamed back. No token lookup, checks, logs, metrics or redaction. It runs
 * pinned like tokenproxy, so "proxy − forwarder" is tokenproxy's own cost and "forwarder − direct"
 * is what any Node + undici forwarder costs on this machine. It runs with `tokenproxy serve`'s V8
 * flags (reference.ts): without them V8's pretenuring sent its per-request objects to the old
 * generation under load (16-18 ms scavenges, measured), which made it a poor reference for tails.
 *
 * Usage: node forwarder.js <cert.pem> <key.pem> <upstream CA.pem> <upstream port>; prints
 * `{"port":N}` once listening.
 */
import { createServer } from 'node:https';
import { Pool, type Dispatcher } from 'undici';
import { listenAndAnnounce, referenceSetup } from './reference.js';

const setup = referenceSetup('forwarder.js');
const pool = new Pool(`https://127.0.0.1:${setup.upstreamPort}`, {
  connect: { secureContext: setup.upstreamContext },
  keepAliveTimeout: 30_000,
});
const DROP = new Set(['host', 'authorization', 'origin', 'connection', 'keep-alive']);
const KEY = 'Bearer sk-bench-0123456789abcdefghijklmnop';

const server = createServer(
  {
    key: setup.key,
    cert: setup.cert,
    minVersion: 'TLSv1.3',
    ALPNProtocols: ['http/1.1'],
    noDelay: true,
    keepAliveTimeout: 65_000,
  },
  (req, res) => {
    const headers: string[] = [];
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      if (!DROP.has(name.toLowerCase())) headers.push(name, raw[i + 1] as string);
    }
    headers.push('authorization', KEY);
    const path = (req.url ?? '/').replace(/^\/openai/, '');
    let controller: Dispatcher.DispatchController | undefined;
    let done = false;
    // A client that leaves (the bench's held streams) ends its upstream request too.
    res.once('close', () => {
      if (!done) controller?.abort(new Error('client closed the connection'));
    });
    const handler: Dispatcher.DispatchHandler = {
      // undici tells the new handler interface from the legacy one by this method.
      onRequestStart(c) {
        controller = c;
        if (res.destroyed) c.abort(new Error('client closed the connection'));
      },
      onResponseStart(_controller, status, upstreamHeaders) {
        const out: string[] = [];
        for (const name in upstreamHeaders) {
          const value = upstreamHeaders[name];
          if (value === undefined || name === 'connection' || name === 'keep-alive') continue;
          if (typeof value === 'string') out.push(name, value);
          else for (const v of value) out.push(name, v);
        }
        res.writeHead(status, out);
        if (upstreamHeaders['content-length'] === undefined) res.flushHeaders();
      },
      onResponseData(_controller, chunk) {
        if (!res.destroyed) res.write(chunk);
      },
      onResponseEnd() {
        done = true;
        res.end();
      },
      onResponseError() {
        done = true;
        if (res.destroyed) return;
        if (res.headersSent) res.destroy();
        else res.writeHead(502).end();
      },
    };
    const hasBody =
      req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    pool.dispatch({ path, method: req.method ?? 'GET', headers, body: hasBody ? req : null }, handler);
  },
);
listenAndAnnounce(server);
