import type { Socket } from 'node:net';

/**
 * Whether an HTTP/1.1 socket has a response in flight: its request was read and its answer has not
 * finished (a long completion waiting on the provider, a stream being relayed). node:http keeps that
 * response on the socket as `_httpMessage` and has no public name for it; its own timeout and
 * parse-error handlers make the same check on the same field.
 */
export function responseInFlight(socket: Socket): boolean {
  const message = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  return message !== undefined && message !== null;
}

/** Whether the in-flight response on the socket has begun (its status line is on the wire). */
export function responseStarted(socket: Socket): boolean {
  const message = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  return message?.headersSent === true;
}
