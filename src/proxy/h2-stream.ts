import type { IncomingHttpHeaders } from 'node:http';
import { constants, type ServerHttp2Stream } from 'node:http2';
import { Readable } from 'node:stream';
import { newRequestId } from '../ids/formats.js';
import { writeProxyError } from './errors.js';
import { headerListSize, MAX_HEADER_BYTES } from './header-limit.js';

/**
 * HTTP/2 requests served on their streams (node:http2's core API), not through Node's compatibility
 * layer, which gave every stream a Readable request and a Stream response of its own, each with its
 * own listeners on the stream (docs/performance.md, round sixteen). `H2Request` and `H2Response` are
 * what the exchange needs of the stream, and nothing more; exchange-io.ts is where the two
 * protocols meet.
 */

/** The peer of a session, read once when it starts, shared by its streams' requests. */
export interface H2Peer {
  readonly remoteAddress: string | undefined;
}

export class H2Request {
  readonly stream: ServerHttp2Stream;
  readonly headers: IncomingHttpHeaders;
  /** Flat `[name, value, …]`, starting with the pseudo-headers (`:method`, `:path`, …). */
  readonly rawHeaders: string[];
  readonly socket: H2Peer;
  #body: H2RequestBody | null = null;

  constructor(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, rawHeaders: string[], peer: H2Peer) {
    this.stream = stream;
    this.headers = headers;
    this.rawHeaders = rawHeaders;
    this.socket = peer;
  }

  get method(): string | undefined {
    return this.headers[':method'] as string | undefined;
  }

  /** Origin-form target, as `IncomingMessage#url`. */
  get url(): string | undefined {
    return this.headers[':path'] as string | undefined;
  }

  /** The body as a stream of its own, made on first use (see H2RequestBody). */
  get body(): Readable {
    return (this.#body ??= new H2RequestBody(this.stream));
  }
}

/**
 * A request body to hand on (to undici, or to the budget peek's replay), which may destroy it when
 * the upstream fails. Destroying the stream itself would reset the client's answer with it, before
 * the proxy could say 502; destroying this leaves the stream alone and lets the rest of the body be
 * read and dropped, as node:http dumps an unread HTTP/1.1 body, so the client can take its answer.
 * Only bodies that are streamed get one: small bodies are read straight off the stream.
 */
export class H2RequestBody extends Readable {
  readonly #stream: ServerHttp2Stream;
  #reading = false;
  #ended = false;

  constructor(stream: ServerHttp2Stream) {
    super();
    this.#stream = stream;
  }

  override _read(): void {
    const stream = this.#stream;
    if (!this.#reading) {
      this.#reading = true;
      stream.on('data', this.#onData);
      stream.once('end', this.#onEnd);
      stream.once('close', this.#onClose);
    }
    stream.resume();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    const stream = this.#stream;
    stream.off('data', this.#onData);
    stream.off('end', this.#onEnd);
    stream.off('close', this.#onClose);
    if (!this.#ended && !stream.destroyed) stream.resume();
    callback(err);
  }

  readonly #onData = (chunk: Buffer): void => {
    if (!this.push(chunk)) this.#stream.pause();
  };

  readonly #onEnd = (): void => {
    this.#ended = true;
    this.push(null);
  };

  readonly #onClose = (): void => {
    if (!this.#ended) this.destroy(CLIENT_LEFT_MID_BODY);
  };
}

const CLIENT_LEFT_MID_BODY = new Error('the client went away before its body was complete');

/**
 * The answer on an HTTP/2 stream, with the members the exchange reads of an HTTP/1.1
 * `ServerResponse`. It responds without waiting for trailers (tokenproxy sends none), so END_STREAM
 * rides on the last DATA frame, and it corks the stream for the rest of the tick on the first write,
 * as node:http does for HTTP/1.1, so what one tick writes goes out in one socket write
 * (docs/performance.md, round fifteen).
 */
export class H2Response {
  readonly stream: ServerHttp2Stream;
  /** The status sent, read back by the request record. */
  statusCode = 200;
  /** The exchange's request id, so an answer written outside it (the request deadline) carries it. */
  requestId = '';

  constructor(stream: ServerHttp2Stream) {
    this.stream = stream;
  }

  get headersSent(): boolean {
    return this.stream.headersSent;
  }

  get destroyed(): boolean {
    return this.stream.destroyed;
  }

  /** Sends the status and headers (flat `[name, value, …]`); a stream already reset gets nothing. */
  respond(status: number, headers: readonly string[]): void {
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return;
    this.statusCode = status;
    stream.respond(h2RawHead(status, headers));
  }

  write(chunk: Buffer): boolean {
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return false;
    if (!stream.writableCorked) {
      stream.cork();
      process.nextTick(uncork, stream);
    }
    return stream.write(chunk);
  }

  end(chunk?: Buffer | string): void {
    const stream = this.stream;
    if (!stream.destroyed && !stream.closed) stream.end(chunk);
  }

  /** The head went out with `respond`; nothing is held back. */
  flushHeaders(): void {}

  /**
   * Resets the stream with INTERNAL_ERROR, which destroying it with an error does. Not `close(code)`:
   * it ends the writable side first, and on a stream answered without trailers that sends END_STREAM
   * before the reset, a complete-looking answer. A plain destroy would reset with NO_ERROR, which a
   * client may also take for complete.
   */
  destroy(): void {
    this.stream.destroy(UPSTREAM_BROKE_OFF);
  }

  /**
   * Whether the whole answer went out. A stream the client reset has its writable side ended by Node
   * on the way down, so `aborted` is what tells a cut stream apart.
   */
  get completed(): boolean {
    return this.stream.writableFinished && !this.stream.aborted;
  }

  once(event: 'close', listener: () => void): this {
    this.stream.once(event, listener);
    return this;
  }

  on(event: 'drain', listener: () => void): this {
    this.stream.on(event, listener);
    return this;
  }
}

/** Only its kind matters (any error but an AbortError resets with INTERNAL_ERROR); nothing reads it. */
const UPSTREAM_BROKE_OFF = new Error('the provider broke off its answer');

function uncork(stream: ServerHttp2Stream): void {
  stream.uncork();
}

/**
 * A flat header list as `respond`'s raw list, `:status` first; a repeated name (`set-cookie`) stays
 * repeated. A new array each time: Node appends `date` to the list it is given. The raw list skips
 * the header object `respond` would copy, check and walk again (~500 bytes per answer,
 * docs/performance.md round twenty-two); Node takes raw lists from 22.20 and 24.7, which `engines`
 * asks for.
 */
export function h2RawHead(status: number, flat: readonly string[]): string[] {
  return [':status', String(status), ...flat];
}

/** What to do with a new stream before it becomes a request: as Node's compatibility layer did. */
export type StreamOpening = 'request' | 'continue' | 'method_not_allowed' | 'expectation_failed';

/**
 * CONNECT is not proxied (405); `Expect: 100-continue` is answered with a 100 at once, any other
 * expectation with 417. The answers Node's compatibility layer gave over HTTP/2; node:http gives the
 * same to `Expect` over HTTP/1.1 (and drops a CONNECT's connection).
 */
export function streamOpening(headers: IncomingHttpHeaders): StreamOpening {
  if (headers[':method'] === 'CONNECT') return 'method_not_allowed';
  const expect = headers.expect;
  if (expect === undefined) return 'request';
  return expect.toLowerCase() === '100-continue' ? 'continue' : 'expectation_failed';
}

/**
 * Takes a new stream to `handle` as a request and its response. Every stream gets an `error`
 * listener: a stream reset or destroyed with an error emits one, and what the exchange needs to know
 * of it, that the stream is gone, it reads from `close`.
 */
export function serveStream(
  handle: (req: H2Request, res: H2Response) => void,
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  rawHeaders: string[],
  peer: H2Peer,
  requestTimeoutMs: number,
): void {
  stream.on('error', ignore);
  const opening = streamOpening(headers);
  if (opening === 'method_not_allowed') {
    // In the proxy's error shape, as every refusal; not a request, so not in the request log.
    const origin = headers.origin;
    writeProxyError(new H2Response(stream), 'method_not_allowed', newRequestId(Date.now()), origin);
    return;
  }
  if (opening === 'expectation_failed') {
    // A bare 417, as node:http answers an unknown Expect over HTTP/1.1.
    stream.respond({ ':status': 417 }, { endStream: true });
    return;
  }
  if (headerListSize(rawHeaders) > MAX_HEADER_BYTES) {
    // As the HTTP/1.1 parser refuses it: not a request, so not in the request log, and not forwarded.
    const origin = headers.origin;
    writeProxyError(new H2Response(stream), 'headers_too_large', newRequestId(Date.now()), origin);
    return;
  }
  if (opening === 'continue') stream.additionalHeaders({ ':status': 100 });
  const res = new H2Response(stream);
  handle(new H2Request(stream, headers, rawHeaders, peer), res);
  // A request whose body is still to come must arrive whole in time, as HTTP/1.1's requestTimeout
  // makes it: a stream that stops sending would otherwise hold its slot (and the upstream
  // connection its body streams to) for as long as the client liked. No timer without a body.
  if (!stream.endAfterHeaders && !stream.destroyed) {
    const deadline = setTimeout(requestTimedOut, requestTimeoutMs, res, headers.origin);
    deadline.unref();
    (stream as DeadlineStream)[DEADLINE] = deadline;
    stream.once('end', clearDeadline);
    stream.once('close', clearDeadline);
  }
}

const DEADLINE = Symbol('tokenproxy.requestDeadline');
type DeadlineStream = ServerHttp2Stream & { [DEADLINE]?: NodeJS.Timeout };

/**
 * One listener function for every stream (`this` is the stream); `once` still wraps it per stream.
 * What a request with a body pays: a Timeout, two wrapped listeners and one property on the stream,
 * against a stream slot held for good without it.
 */
function clearDeadline(this: DeadlineStream): void {
  clearTimeout(this[DEADLINE]);
}

/**
 * The body did not end in time. Not answered yet: 408 on the exchange's own response object, so its
 * record says 408 under the request id the client got, and the rest of the body is not read (the
 * stream is reset once the answer is out). Answered already: reset with INTERNAL_ERROR, as a provider
 * breaking off is, so the client never takes the answer for complete.
 */
function requestTimedOut(res: H2Response, origin: string | string[] | undefined): void {
  const stream = res.stream;
  if (stream.destroyed) return;
  if (stream.headersSent) {
    res.destroy();
    return;
  }
  const id = res.requestId === '' ? newRequestId(Date.now()) : res.requestId;
  writeProxyError(res, 'request_timeout', id, typeof origin === 'string' ? origin : undefined);
  stream.close(constants.NGHTTP2_CANCEL);
}

function ignore(): void {}
