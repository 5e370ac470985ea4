import { Transform, type TransformCallback } from 'node:stream';

/**
 * Streaming replacement of a secret (the real key) by `[REDACTED]`, for provider answers that echo
 * it. A chunk is passed on at once except for a tail that could be the start of the secret continued
 * in the next chunk: at most `secret.length - 1` bytes, and only when those bytes really are a prefix
 * of the secret. A stream that never mentions the secret is therefore never delayed, and a chunk
 * without a match or a suspicious tail is passed on as the same Buffer (no copy).
 */

export const REDACTED = Buffer.from('[REDACTED]');

export class StreamRedactor {
  readonly #secret: Buffer;
  #held: Buffer | null = null;

  /** The redactor reads `secret` on every chunk and never copies it: zero it when the stream is over. */
  constructor(secret: Buffer) {
    if (secret.length === 0) throw new RangeError('cannot redact an empty secret');
    this.#secret = secret;
  }

  /** The bytes to pass on now for `chunk` (possibly empty). */
  write(chunk: Buffer): Buffer {
    const data = this.#held === null ? chunk : Buffer.concat([this.#held, chunk]);
    this.#held = null;
    const secret = this.#secret;
    let match = data.indexOf(secret);
    if (match === -1) {
      const hold = heldTail(data, 0, secret);
      if (hold === 0) return data;
      this.#held = Buffer.from(data.subarray(data.length - hold));
      return data.subarray(0, data.length - hold);
    }
    const parts: Buffer[] = [];
    let from = 0;
    while (match !== -1) {
      parts.push(data.subarray(from, match), REDACTED);
      from = match + secret.length;
      match = data.indexOf(secret, from);
    }
    const hold = heldTail(data, from, secret);
    parts.push(data.subarray(from, data.length - hold));
    if (hold > 0) this.#held = Buffer.from(data.subarray(data.length - hold));
    return Buffer.concat(parts);
  }

  /** Whatever was held back: at the end of the stream a partial secret is not the secret. */
  flush(): Buffer {
    const held = this.#held;
    this.#held = null;
    return held ?? EMPTY;
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * Length of the longest suffix of `data[from..]` that is a proper prefix of `secret` (0 if none).
 * Only positions holding the secret's first byte are tried, so the common case is one short scan.
 */
function heldTail(data: Buffer, from: number, secret: Buffer): number {
  const len = data.length;
  const first = secret[0];
  for (let start = Math.max(from, len - secret.length + 1); start < len; start++) {
    if (data[start] !== first) continue;
    if (data.compare(secret, 0, len - start, start, len) === 0) return len - start;
  }
  return 0;
}

/** Replaces every occurrence of `secret` in a header value (a string, since header values are). */
export function redactText(value: string, secret: string): string {
  return secret !== '' && value.includes(secret) ? value.replaceAll(secret, '[REDACTED]') : value;
}

/** The same redactor as a Transform, for piping. */
export function redactingTransform(secret: Buffer): Transform {
  const redactor = new StreamRedactor(secret);
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      const out = redactor.write(chunk);
      callback(null, out.length === 0 ? undefined : out);
    },
    flush(callback: TransformCallback) {
      const out = redactor.flush();
      callback(null, out.length === 0 ? undefined : out);
    },
  });
}
