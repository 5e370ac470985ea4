import { Transform, type TransformCallback } from 'node:stream';

/**
 * Streaming replacement of secrets (the real key and its encodings, src/proxy/key-encodings.ts) by
 * `[REDACTED]`, for provider answers that echo them. A chunk is passed on at once except for a tail
 * that could be the start of a secret continued in the next chunk: at most longest secret − 1 bytes,
 * and only when those bytes really are a prefix of one. A stream that never mentions a secret is
 * therefore never delayed, and a chunk without a match or a suspicious tail is passed on as the same
 * Buffer (no copy).
 */

export const REDACTED = Buffer.from('[REDACTED]');

export class StreamRedactor {
  readonly #secrets: readonly Buffer[];
  #held: Buffer | null = null;
  /** Length of the secret #firstMatch found (a field, so the hot path allocates no result object). */
  #matchLength = 0;

  /**
   * The redactor reads the secrets on every chunk and never copies them: zero them when the stream
   * is over. Where two secrets match at the same place the longer one wins.
   */
  constructor(secrets: Buffer | readonly Buffer[]) {
    const list = Buffer.isBuffer(secrets) ? [secrets] : secrets;
    if (list.length === 0 || list.some((s) => s.length === 0)) {
      throw new RangeError('cannot redact an empty secret');
    }
    this.#secrets = list;
  }

  /** The bytes to pass on now for `chunk` (possibly empty). */
  write(chunk: Buffer): Buffer {
    const data = this.#held === null ? chunk : Buffer.concat([this.#held, chunk]);
    this.#held = null;
    let parts: Buffer[] | null = null;
    let from = 0;
    for (;;) {
      const at = this.#firstMatch(data, from);
      if (at === -1) break;
      (parts ??= []).push(data.subarray(from, at), REDACTED);
      from = at + this.#matchLength;
    }
    let hold = 0;
    for (const secret of this.#secrets) hold = Math.max(hold, heldTail(data, from, secret));
    if (hold > 0) this.#held = Buffer.from(data.subarray(data.length - hold));
    if (parts === null) return hold === 0 ? data : data.subarray(0, data.length - hold);
    parts.push(data.subarray(from, data.length - hold));
    return Buffer.concat(parts);
  }

  /** Whatever was held back: at the end of the stream a partial secret is not the secret. */
  flush(): Buffer {
    const held = this.#held;
    this.#held = null;
    return held ?? EMPTY;
  }

  /** Position of the earliest match at or after `from` (the longest there); -1 if none. */
  #firstMatch(data: Buffer, from: number): number {
    let best = -1;
    let length = 0;
    for (const secret of this.#secrets) {
      const at = data.indexOf(secret, from);
      if (at === -1) continue;
      if (best === -1 || at < best || (at === best && secret.length > length)) {
        best = at;
        length = secret.length;
      }
    }
    this.#matchLength = length;
    return best;
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
    // A plain loop: the tail is short and usually differs at once, where Buffer#compare with
    // ranges costs about a microsecond per call.
    let i = start + 1;
    let j = 1;
    while (i < len && data[i] === secret[j]) {
      i++;
      j++;
    }
    if (i === len) return len - start;
  }
  return 0;
}

/** Replaces every occurrence of each secret in a header value (a string, since header values are). */
export function redactText(value: string, secrets: string | readonly string[]): string {
  if (typeof secrets === 'string') {
    return secrets !== '' && value.includes(secrets) ? value.replaceAll(secrets, '[REDACTED]') : value;
  }
  let out = value;
  for (const secret of secrets) {
    if (secret !== '' && out.includes(secret)) out = out.replaceAll(secret, '[REDACTED]');
  }
  return out;
}

/** The same redactor as a Transform, for piping. */
export function redactingTransform(secrets: Buffer | readonly Buffer[]): Transform {
  const redactor = new StreamRedactor(secrets);
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
