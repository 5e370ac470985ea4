import type { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { DescriptorAlarm } from '../observability/descriptor-alarm.js';
import type { Dispatcher } from 'undici';
import { errorSummary } from '../errors/summary.js';
import {
  answerEncoding,
  createChainDecoder,
  UndecodableAnswerError,
  type ChainDecoder,
} from './answer-encoding.js';
import type { UsageScanner } from '../usage/usage-scanner.js';
import { sendHead, type ProxyRequest, type ProxyResponse } from './exchange-io.js';
import { writeProxyError, type ProxyErrorCode } from './errors.js';
import { relayedHeaders, responseHasBody, upstreamHeaders } from './headers.js';
import { KeyPatterns } from './key-encodings.js';
import { StreamRedactor } from './redact.js';
import { upstreamPath } from './route.js';
import { logUpstreamFailure, upstreamErrorCode } from './upstream-failure.js';
import type { Upstream } from './upstream.js';
import { scannerFor } from './usage-meter.js';

const CLIENT_GONE = new Error('client closed the connection');

/** What a relay reads from the exchange it serves, and the two figures it reports back for the record. */
export interface RelayOwner {
  readonly req: ProxyRequest;
  readonly res: ProxyResponse;
  readonly requestId: string;
  /** The request's `Origin` header, echoed in CORS headers; undefined when absent. */
  readonly originHeader: string | undefined;
  /** `RateLimit-*` headers for the answer of a rate-limited token. */
  readonly limitHeaders: readonly string[] | null;
  readonly clientGone: boolean;
  readonly logger: Logger | undefined;
  /** Told when an upstream connection could not be opened for want of a descriptor. */
  readonly descriptors: DescriptorAlarm | undefined;
  /** `performance.now()` when the request arrived. */
  readonly start: number;
  /** Time tokenproxy itself spent on the request; the relay adds its share. */
  addedMs: number;
  /** Time spent waiting for the client's body before forwarding, left out of `addedMs`. */
  readonly bodyWaitMs: number;
  /** The proxy's own error answer, when the provider could not be reached. */
  errorCode: ProxyErrorCode | null;
}

/** Headers of an error answer the SDKs must not send again (the provider did answer). */
const NO_RETRY: readonly string[] = ['x-should-retry', 'false'];

/**
 * The forwarded leg of one exchange: undici's dispatch handler for the provider's answer, which it
 * streams back to the client through the key redactor. It holds the decrypted key, and wipes it as
 * soon as the provider's answer is over or the client has gone, whichever comes first.
 */
export class Relay implements Dispatcher.DispatchHandler {
  readonly #ex: RelayOwner;
  readonly #upstream: Upstream;
  #key: Buffer | null;
  /** The key's encodings, which the redactor looks for; wiped with the key. */
  #patterns: KeyPatterns | null;
  readonly #redactor: StreamRedactor;
  #controller: Dispatcher.DispatchController | null = null;
  /** Set for a compressed answer (answer-encoding.ts): the body is decoded before redaction. */
  #decoder: ChainDecoder | null = null;
  #drainHooked = false;
  #sentAt = 0;
  /** Time from dispatch to the provider's status line; null while none has come. */
  upstreamMs: number | null = null;
  /** Usage read from the answer as it passes (src/usage); null for answers that cannot say any. */
  scanner: UsageScanner | null = null;
  /** The provider's answer is over (ended or failed). */
  done = false;
  /** The whole answer arrived (not cut off by the provider, the client or a timeout). */
  completed = false;
  /** An event stream: its usage, when there is any, comes last. */
  streamed = false;

  constructor(ex: RelayOwner, upstream: Upstream, key: Buffer) {
    this.#ex = ex;
    this.#upstream = upstream;
    this.#key = key;
    this.#patterns = new KeyPatterns(key);
    this.#redactor = new StreamRedactor(this.#patterns.patterns);
  }

  /**
   * Sends the request to the provider. `body` is a small body read whole, the client's request to
   * stream, or a budget peek's body; null for a request without one.
   */
  start(suffix: string, body: Buffer | Readable | null): void {
    const ex = this.#ex;
    const req = ex.req;
    const upstream = this.#upstream;
    // Header values are strings, and JS strings cannot be wiped: this copy lives until the GC takes
    // it. The Buffer, which is what the vault hands out, is zeroed as soon as the request is over.
    const keyText = (this.#key as Buffer).toString('latin1');
    const headers = upstreamHeaders(
      req.rawHeaders,
      req.headers.connection,
      upstream.authHeader,
      upstream.bearer ? `Bearer ${keyText}` : keyText,
    );
    this.#sentAt = performance.now();
    ex.addedMs = this.#sentAt - ex.start - ex.bodyWaitMs;
    upstream.pool.dispatch(
      {
        path: upstreamPath(upstream.basePath, suffix),
        method: req.method ?? 'GET',
        headers,
        body,
      },
      this,
    );
  }

  /** The client went away: stop the provider's answer, and wipe the key now. */
  clientClosed(): void {
    if (!this.done) this.#controller?.abort(CLIENT_GONE);
    this.#decoder?.destroy();
    this.wipeKey();
  }

  wipeKey(): void {
    if (this.#key !== null) {
      this.#key.fill(0);
      this.#key = null;
    }
    if (this.#patterns !== null) {
      this.#patterns.wipe();
      this.#patterns = null;
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#ex.clientGone) controller.abort(CLIENT_GONE);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    upstreamHeaders: Record<string, string | string[] | undefined>,
  ): void {
    if (status < 200) return; // 1xx interim answers are not relayed
    const arrived = performance.now();
    this.upstreamMs = arrived - this.#sentAt;
    const ex = this.#ex;
    const res = ex.res;
    if (ex.clientGone || res.destroyed) {
      controller.abort(CLIENT_GONE);
      return;
    }
    const hasBody = responseHasBody(ex.req.method ?? 'GET', status);
    const encoding = hasBody ? answerEncoding(upstreamHeaders['content-encoding']) : undefined;
    if (encoding?.kind === 'decoded') this.#decodeWith(createChainDecoder(encoding.names));
    else if (encoding?.kind === 'undecodable') {
      // Refused before anything is relayed: undici reports the abort to onResponseError, which
      // answers 502 and logs the cause.
      controller.abort(new UndecodableAnswerError(encoding.name));
      return;
    }
    const out = relayedHeaders(
      upstreamHeaders,
      hasBody,
      this.#patterns as KeyPatterns,
      ex.originHeader,
      ex.requestId,
      ex.limitHeaders,
      this.#decoder !== null,
    );
    sendHead(res, status, out);
    const contentType = upstreamHeaders['content-type'];
    if (hasBody) this.scanner = scannerFor(contentType);
    this.streamed = typeof contentType === 'string' && contentType.includes('event-stream');
    // A stream's first bytes may be a while coming: let the client see the status now.
    if (hasBody && upstreamHeaders['content-length'] === undefined) res.flushHeaders();
    ex.addedMs += performance.now() - arrived;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const res = this.#ex.res;
    if (this.#ex.clientGone || res.destroyed) return;
    if (this.#decoder !== null) {
      if (!this.#decoder.input.write(chunk)) controller.pause();
      return;
    }
    this.#relay(chunk);
  }

  onResponseEnd(): void {
    // Done with undici's side: a decoder still draining must not pause or resume it any more (its
    // connection may already carry the next request).
    this.#controller = null;
    if (this.#decoder !== null) this.#decoder.input.end();
    else this.#complete();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    this.#decoder?.destroy();
    this.#failed(err);
  }

  /** Redacts one piece of the (decoded) body and sends it, pausing the provider while the client lags. */
  #relay(chunk: Buffer): void {
    const res = this.#ex.res;
    if (this.#ex.clientGone || res.destroyed) return;
    const out = this.#redactor.write(chunk);
    if (out.length === 0) return;
    // The scanner reads what the client gets, after redaction: a provider that echoes the key where
    // a model name goes would otherwise put it in the request log.
    this.scanner?.write(out);
    if (!res.write(out)) {
      this.#controller?.pause();
      this.#decoder?.output.pause();
      if (!this.#drainHooked) {
        this.#drainHooked = true;
        res.on('drain', this.#onDrain);
      }
    }
  }

  /** The whole answer has passed: the redactor's held-back tail goes out, and the key is wiped. */
  #complete(): void {
    this.completed = true;
    const tail = this.#redactor.flush();
    if (tail.length > 0) this.scanner?.write(tail);
    this.#finished();
    const res = this.#ex.res;
    if (this.#ex.clientGone || res.destroyed) return;
    if (tail.length > 0) res.end(tail);
    else res.end();
  }

  #decodeWith(decoder: ChainDecoder): void {
    this.#decoder = decoder;
    decoder.output.on('data', (plain: Buffer) => this.#relay(plain));
    decoder.input.on('drain', () => this.#controller?.resume());
    decoder.output.once('end', () => this.#complete());
    // A body that does not decode is a provider breaking off mid-answer.
    decoder.output.once('error', (err) => {
      if (!this.done) this.#controller?.abort(err);
      this.#failed(err);
    });
  }

  #failed(err: Error): void {
    if (this.done) return;
    // What the redactor holds back is part of what was received: the scanner reads it too, while
    // the key's forms are still there to redact it (a client that left has had them wiped).
    if (this.#patterns !== null) {
      const tail = this.#redactor.flush();
      if (tail.length > 0) this.scanner?.write(tail);
    }
    this.#finished();
    const ex = this.#ex;
    const res = ex.res;
    if (ex.clientGone || res.destroyed) return;
    const code = upstreamErrorCode(err);
    if (code === 'internal_error') {
      ex.logger?.error({ err: errorSummary(err) }, 'upstream request failed');
    } else if (ex.logger !== undefined) {
      logUpstreamFailure(
        ex.logger,
        err,
        ex.requestId,
        this.#upstream.id,
        code,
        res.headersSent,
        ex.descriptors,
      );
    }
    if (res.headersSent) {
      // The provider broke off mid-answer: end the client's response as broken too, never hang it
      // (HTTP/1.1 loses its connection, an h2 stream is reset with INTERNAL_ERROR).
      res.destroy();
      return;
    }
    const failedAt = performance.now();
    // The provider did answer (and may have charged for it): sending it again would charge again.
    const extra = err instanceof UndecodableAnswerError ? NO_RETRY : null;
    writeProxyError(res, code, ex.requestId, ex.originHeader, extra);
    ex.errorCode = code;
    ex.addedMs += performance.now() - failedAt;
  }

  readonly #onDrain = (): void => {
    this.#decoder?.output.resume();
    this.#controller?.resume();
  };

  #finished(): void {
    this.done = true;
    this.wipeKey();
  }
}
