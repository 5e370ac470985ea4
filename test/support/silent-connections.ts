import { connect } from 'node:net';

/**
 * Opens `count` TCP connections to `port` that never start TLS, and resolves to how many the server
 * closed within `withinMs`: a connection left in the handshake must not hold a socket for good.
 */
export async function silentConnectionsClosed(
  port: number,
  count: number,
  withinMs: number,
): Promise<number> {
  const closed = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<boolean>((resolve) => {
          const socket = connect({ host: '127.0.0.1', port });
          socket.on('error', () => undefined);
          const timer = setTimeout(() => {
            socket.destroy();
            resolve(false);
          }, withinMs);
          // The server's FIN (or reset): it gave the connection up.
          socket.once('close', () => {
            clearTimeout(timer);
            resolve(true);
          });
          socket.once('end', () => socket.destroy());
        }),
    ),
  );
  return closed.filter(Boolean).length;
}
