import { Readable } from 'node:stream';
import { concatChunks, readUntil } from '../proxy/request-body.js';

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
export async function peekBody(req: Readable, max: number): Promise<PeekedBody | null> {
  const part = await readUntil(req, max);
  if (part === null) return null;
  const prefix = concatChunks(part.chunks, part.size);
  const complete = part.ended;
  // A whole body goes upstream as the Buffer it already is (no stream: request-body.ts says why).
  const body = complete ? prefix : Readable.from(replay(prefix, req), { objectMode: false });
  return { prefix, complete, body };
}

async function* replay(prefix: Buffer, rest: Readable): AsyncGenerator<Buffer> {
  if (prefix.length > 0) yield prefix;
  for await (const chunk of rest) yield chunk as Buffer;
}
