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
import { connect, createServer } from 'node:tls';
import { listenAndAnnounce, referenceSetup } from './reference.js';

const setup = referenceSetup('relay.js');

const server = createServer(
  {
    key: setup.key,
    cert: setup.cert,
    minVersion: 'TLSv1.3',
    ALPNProtocols: ['http/1.1'],
  },
  (client) => {
    client.setNoDelay(true);
    const upstream = connect({
      host: '127.0.0.1',
      port: setup.upstreamPort,
      secureContext: setup.upstreamContext,
      ALPNProtocols: ['http/1.1'],
    });
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
listenAndAnnounce(server);
