import { Readable } from 'node:stream';

export interface PeekedBody {
  /** The first bytes of the body, at least `max` unless the body is shorter. */
  readonly prefix: Buffer;
  /** The prefix is the whole body. */
  readonly complete: boolean;
  /** The whole body again for the upstream request: the prefix itself when complete, else a replay. */
  readonly body: Buffer | Readable;
}

/**
 * Reads the start of a request body before it is forwarded (budgeted requests only), keeping the
 * rest in the stream: at most about `max` bytes (plus one chunk) are held, never the whole body.
 * Resolves null when the client goes away first.
 */
export function peekBody(req: Readable, max: number): Promise<PeekedBody | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (complete: boolean | null): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
      if (complete === null) return resolve(null);
      const prefix = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      // A whole body goes upstream as the Buffer it already is (no stream: request-body.ts says why).
      const body = complete ? prefix : Readable.from(replay(prefix, req), { objectMode: false });
      resolve({ prefix, complete, body });
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= max) {
        req.pause();
        finish(false);
      }
    };
    const onEnd = (): void => finish(true);
    const onGone = (): void => finish(null);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onGone);
    req.once('close', onGone);
  });
}

async function* replay(prefix: Buffer, rest: Readable): AsyncGenerator<Buffer> {
  if (prefix.length > 0) yield prefix;
  for await (const chunk of rest) yield chunk as Buffer;
}
