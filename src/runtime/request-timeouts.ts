/**
 * How long a client may take to send a request, on both listeners (docs/errors.md,
 * `request_timeout`): a slow-loris client holding sockets open with a head it never finishes, or a
 * body it trickles, is answered 408 and closed.
 */

/** The whole request head (request line and headers). */
export const HEAD_TIMEOUT_MS = 20_000;
/** The whole request, body included (an upload). */
export const REQUEST_TIMEOUT_MS = 10 * 60_000;
/**
 * How often Node checks the two limits above. Its default, 30 s, let a slow head hold on for 50 s;
 * never longer than the head limit itself.
 */
export function timeoutCheckIntervalMs(headTimeoutMs: number): number {
  return Math.min(5_000, headTimeoutMs);
}
