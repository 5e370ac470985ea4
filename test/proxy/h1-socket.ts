import { connect, type TLSSocket } from 'node:tls';

/** A raw TLS socket to the proxy that negotiated HTTP/1.1, for bytes no HTTP client would send. */
export function h1Connect(url: string, ca: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port: Number(new URL(url).port),
      servername: 'localhost',
      ca,
      ALPNProtocols: ['http/1.1'],
    });
    socket.once('secureConnect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}
