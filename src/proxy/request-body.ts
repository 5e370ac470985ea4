import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';

/**
 * Request bodies up to this size that declare their length are read whole before they are
 * forwarded, and sent upstream as one Buffer; larger bodies, and bodies of unknown length, are
 * streamed. A whole small body takes undici's plain buffer path instead of its stream path, whose
 * per-request closures V8's unoptimized code allocates in the old generation (docs/performance.md,
 * round fourteen), and a client still sending its body holds no upstream connection meanwhile.
 * 64 KiB covers typical chat requests while bounding what 1,000 slow uploads can pin (64 MB).
 */
export const COLLECTED_BODY_MAX_BYTES = 64 * 1024;

const DIGITS = /^\d{1,10}$/;

/**
 * The body length to collect, from the request's `content-length`: null when the body is to be
 * streamed (no or an unusable length, or more than `max`). The parsers have already refused a
 * malformed length on HTTP/1.1 and a body that disagrees with it on HTTP/2; this only decides the path.
 */
export function collectedLength(
  headers: IncomingHttpHeaders,
  max: number = COLLECTED_BODY_MAX_BYTES,
): number | null {
  const value = headers['content-length'];
  if (value === undefined || !DIGITS.test(value)) return null;
  const length = Number(value);
  return length <= max ? length : null;
}

/**
 * Reads a body of `length` bytes whole. When all of it is already buffered in the stream it is taken
 * at once; otherwise (usually: the request handler runs before the parser has passed on the body, even
 * when both came in one read) the promise resolves when the body ends. Resolves null when the client
 * goes away first, or sends other than it declared.
 */
export function collectBody(body: Readable, length: number): Buffer | Promise<Buffer | null> {
  if (body.readableLength === length && !body.readableFlowing) {
    // The parsers never pass on more than the declared length, so these bytes are the whole body;
    // resuming lets the stream reach its end (and the server its next request) with nothing to lose.
    const whole = length === 0 ? EMPTY : (body.read(length) as Buffer);
    body.resume();
    return whole;
  }
  if (body.readableEnded || body.destroyed) return Promise.resolve(null);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (result: Buffer | null): void => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onGone);
      body.off('close', onGone);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > length) return finish(null);
      chunks.push(chunk);
    };
    const onEnd = (): void => finish(size === length ? concat(chunks, size) : null);
    const onGone = (): void => finish(null);
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onGone);
    body.once('close', onGone);
  });
}

const EMPTY = Buffer.alloc(0);

function concat(chunks: Buffer[], size: number): Buffer {
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}
