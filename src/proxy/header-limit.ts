/** Request heads larger than this are refused 431 `headers_too_large`, over HTTP/1.1 and HTTP/2. */
export const MAX_HEADER_BYTES = 16 * 1024;

/**
 * An HTTP/2 header list's size as RFC 9113 measures it (name and value lengths plus 32 per field),
 * from `[name, value, …]`. The SETTINGS limit nghttp2 enforces holds only once a client has
 * acknowledged it; this holds for every client.
 */
export function headerListSize(rawHeaders: readonly string[]): number {
  let size = 0;
  for (let i = 0; i < rawHeaders.length; i++) size += (rawHeaders[i] as string).length;
  return size + 16 * rawHeaders.length;
}
