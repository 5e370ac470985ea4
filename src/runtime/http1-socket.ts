import type { Socket } from 'node:net';

/**
 * The response in flight on an HTTP/1.1 socket: its request was read and its answer has not finished
 * (a long completion waiting on the provider, a stream being relayed). node:http keeps it on the
 * socket as `_httpMessage` and has no public name for it; its own timeout and parse-error handlers
 * read the same field.
 */
function inFlight(socket: Socket): { readonly headersSent?: boolean } | null | undefined {
  return (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
}

/** Whether the socket has a response in flight. */
export function responseInFlight(socket: Socket): boolean {
  return inFlight(socket) != null;
}

/** Whether the in-flight response on the socket has begun (its status line is on the wire). */
export function responseStarted(socket: Socket): boolean {
  return inFlight(socket)?.headersSent === true;
}
