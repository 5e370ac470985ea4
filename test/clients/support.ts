import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { runCli, startServe, type ServerProcess } from '../support/cli.js';

/** A real `tokenproxy serve` for the client-library tests, with two accounts. */
export interface ClientTestServer {
  readonly server: ServerProcess;
  readonly dataDir: string;
  /** `<dataDir>/tls/cert.pem`: the self-signed certificate the clients must trust. */
  readonly caFile: string;
  readonly ca: string;
  /** `https://…/v1` */
  readonly baseUrl: string;
  /** The first account (plan free, printed at first start). */
  readonly freeApiKey: string;
  /** API key of a fresh account on plan `unlimited`. */
  newAccount(): Promise<string>;
  stop(): Promise<void>;
}

export async function startClientTestServer(): Promise<ClientTestServer> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-clients-'));
  const server = await startServe(['--data-dir', dataDir, '--allow-private-webhooks']);
  const freeApiKey = /svc_sk_[1-9A-HJ-NP-Za-km-z]{43}/.exec(server.stderr() + server.stdout())?.[0];
  if (freeApiKey === undefined) throw new Error(`no API key printed:\n${server.stderr()}`);
  const caFile = path.join(dataDir, 'tls', 'cert.pem');
  const ca = await readFile(caFile, 'utf8');
  const baseUrl = `${server.apiUrl}/v1`;
  return {
    server,
    dataDir,
    caFile,
    ca,
    baseUrl,
    freeApiKey,
    async newAccount() {
      const res = await runCli([
        'accounts',
        'create',
        '--name',
        'clients',
        '--plan',
        'unlimited',
        '--json',
        '--data-dir',
        dataDir,
      ]);
      if (res.code !== 0) throw new Error(res.stderr);
      return (JSON.parse(res.stdout) as { api_key: string }).api_key;
    },
    async stop() {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A TLS-terminating relay in front of the server that, on its first connection, forwards the
 * request but drops the connection instead of returning the answer: the work is done, the client
 * never hears of it. Later connections pass through. It presents the server's own certificate.
 */
export interface DroppingProxy {
  readonly baseUrl: string;
  readonly connections: () => number;
  close(): Promise<void>;
}

export async function startDroppingProxy(t: ClientTestServer): Promise<DroppingProxy> {
  const key = await readFile(path.join(t.dataDir, 'tls', 'key.pem'), 'utf8');
  const upstream = new URL(t.baseUrl);
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ key, cert: t.ca, minVersion: 'TLSv1.3' }, (client) => {
    const n = ++connections;
    sockets.add(client);
    const up = tls.connect({
      host: upstream.hostname,
      port: Number(upstream.port),
      ca: t.ca,
      servername: 'localhost',
    });
    sockets.add(up);
    client.pipe(up);
    if (n === 1) {
      up.once('data', () => {
        client.destroy();
        up.destroy();
      });
    } else {
      up.pipe(client);
    }
    const end = () => {
      client.destroy();
      up.destroy();
    };
    client.on('error', end);
    up.on('error', end);
    client.on('close', () => up.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    baseUrl: `https://127.0.0.1:${port}/v1`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A plain TCP pass-through to the server that counts connections: a client that retries a refused
 * certificate would open more than one. TLS is end to end (the client sees the server's own cert).
 */
export async function startCountingProxy(t: ClientTestServer): Promise<DroppingProxy> {
  const upstream = new URL(t.baseUrl);
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    connections++;
    const up = net.connect({ host: upstream.hostname, port: Number(upstream.port) });
    sockets.add(client);
    sockets.add(up);
    client.pipe(up);
    up.pipe(client);
    const end = () => {
      client.destroy();
      up.destroy();
    };
    client.on('error', end);
    up.on('error', end);
    client.on('close', end);
    up.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, upstream.hostname, resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    baseUrl: `https://${upstream.host.replace(/:\d+$/, '')}:${port}/v1`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
