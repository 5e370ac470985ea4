import type { Server } from 'node:net';
import type { ConnectionLimits } from '../config/connection-limits.js';
import {
  isDescriptorExhaustion,
  type AlarmLogger,
  type DescriptorAlarm,
} from '../observability/descriptor-alarm.js';

/**
 * Caps a listener's open connections (src/config/connection-limits.ts). Node checks the cap right
 * after accept, before any TLS work, and closes the new socket at once ('drop'): a refusal costs an
 * accept and a close, and the descriptors the process has left stay with the other listener, the
 * store and the upstream connections. On the proxy, HTTP/1.1 and HTTP/2 connections count alike
 * (both are sockets of the TLS server underneath), and so does one still in its TLS handshake.
 */
export function capConnections(
  server: Server,
  max: number | undefined,
  alarm: DescriptorAlarm,
  logger: AlarmLogger | undefined,
  onRefused?: () => void,
): void {
  if (max !== undefined) server.maxConnections = max;
  // In a `--workers` worker, node:cluster would otherwise hand a connection refused at the cap back
  // to the primary, which offers it to the next worker, and round again while all are full: the
  // connection is neither served nor closed. Closed here instead. (No effect outside a cluster.)
  (server as Server & { dropMaxConnection: boolean }).dropMaxConnection = true;
  server.on('drop', () => {
    alarm.connectionRefused();
    onRefused?.();
  });
  // libuv keeps a spare descriptor to accept-and-close connections it has no room for; when even
  // that is gone, accept's EMFILE reaches the server as an 'error' event, which with no listener
  // would end the process. It is told instead; accepting goes on once descriptors are free.
  server.on('error', (err: NodeJS.ErrnoException) => {
    // A failed bind is listen()'s to report (it names the setting and the port); with no one else
    // listening it stays the throw it was.
    if (!server.listening) {
      if (server.listenerCount('error') === 1) throw err;
      return;
    }
    if (err.syscall === 'accept' && isDescriptorExhaustion(err.code)) {
      alarm.exhausted('accept', err.code ?? '');
      return;
    }
    logger?.error({ error_code: err.code ?? null, syscall: err.syscall ?? null }, 'listener error');
  });
}

/** Said once at start when settings given explicitly leave the caps unable to protect descriptors. */
export function warnIfOvercommitted(logger: AlarmLogger | undefined, limits: ConnectionLimits): void {
  if (!limits.overcommitted) return;
  logger?.warn(
    {
      descriptor_limit: limits.descriptorLimit ?? null,
      proxy_max_connections: limits.proxy ?? null,
      upstream_max_connections: limits.upstream ?? null,
    },
    'proxy_max_connections and upstream_max_connections together exceed what the descriptor limit leaves ' +
      'after the process’s own files: a flood can exhaust descriptors before the caps refuse it. ' +
      'Raise the descriptor limit (LimitNOFILE) or lower the settings.',
  );
}
