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
  // One byte past the declared length is enough to know the client sent more than it said.
  return readUntil(body, length + 1).then((part) =>
    part !== null && part.ended && part.size === length ? concatChunks(part.chunks, part.size) : null,
  );
}

/** What `readUntil` read: its chunks in order, their total size, and whether the stream ended. */
export interface ReadPart {
  readonly chunks: readonly Buffer[];
  readonly size: number;
  /** The stream ended; otherwise `stopAt` was reached and the rest is left in the (paused) stream. */
  readonly ended: boolean;
}

/**
 * Reads `stream` until it ends or at least `stopAt` bytes have come, whichever is first; past
 * `stopAt` it pauses the stream and leaves the rest in it. Resolves null when the stream errors or
 * closes first (the client went away). Shared by the whole-body read above and the budget peek.
 */
export function readUntil(stream: Readable, stopAt: number): Promise<ReadPart | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (result: ReadPart | null): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onGone);
      stream.off('close', onGone);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= stopAt) {
        stream.pause();
        finish({ chunks, size, ended: false });
      }
    };
    const onEnd = (): void => finish({ chunks, size, ended: true });
    const onGone = (): void => finish(null);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onGone);
    stream.once('close', onGone);
  });
}

const EMPTY = Buffer.alloc(0);

/** The chunks as one Buffer, without a copy when there is only one. */
export function concatChunks(chunks: readonly Buffer[], size: number): Buffer {
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}
