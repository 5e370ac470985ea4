/**
 * The bench's raw TLS relay: the floor under any Node.js TLS proxy. Each client TLS connection gets
 * one TLS connection of its own to the stand-in, and bytes are copied both ways unchanged: no HTTP
 * parsing, no header rewrite, no key swap. It pays exactly the TLS and socket work a proxy cannot
 * avoid (two TLS sockets per stream, every request decrypted and re-encrypted twice), so its CPU per
 * request and its RSS with open streams bound what any Node proxy, tokenproxy included, can reach on
 * this machine. Not a proxy: it cannot tell requests apart, so it cannot check or log anything.
 *
 * Usage: node relay.js <cert.pem> <key.pem> <upstream CA.pem> <upstream port>; prints
 * `{"port":N}` once listening.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { connect, createSecureContext, createServer, rootCertificates } from 'node:tls';
import { applyServeV8Flags } from '../src/server/v8-tuning.js';

// The same runtime settings as `tokenproxy serve` and the forwarder, so only the code differs.
applyServeV8Flags();

const [certFile, keyFile, caFile, upstreamPort] = process.argv.slice(2);
if (certFile === undefined || keyFile === undefined || caFile === undefined || upstreamPort === undefined) {
  process.stderr.write('usage: relay.js <cert.pem> <key.pem> <upstream-ca.pem> <upstream-port>\n');
  process.exit(2);
}

// One context for every upstream connection, as tokenproxy and the forwarder have (upstream.ts).
const secureContext = createSecureContext({ ca: [...rootCertificates, readFileSync(caFile, 'utf8')] });
const port = Number(upstreamPort);

const server = createServer(
  {
    key: readFileSync(keyFile),
    cert: readFileSync(certFile),
    minVersion: 'TLSv1.3',
    ALPNProtocols: ['http/1.1'],
  },
  (client) => {
    client.setNoDelay(true);
    const upstream = connect({ host: '127.0.0.1', port, secureContext, ALPNProtocols: ['http/1.1'] });
    upstream.setNoDelay(true);
    client.pipe(upstream);
    upstream.pipe(client);
    const close = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  },
);
server.on('tlsClientError', () => undefined);
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
