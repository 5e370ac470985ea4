import { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { UnauthorizedReason } from '../anomalies/record.js';
import { errorSummary } from '../errors/summary.js';
import { isSanitizedToken, newRequestId, secretDigest } from '../ids/formats.js';
import type { ObservedRequest } from '../limits/anomaly-detector.js';
import type { Admission } from '../limits/proxy-limits.js';
import { clientIp, compileIpMatcher, type IpMatcher } from '../rules/ip-match.js';
import { recordPath } from '../requestlog/record.js';
import { requestOrigin } from '../rules/origin-match.js';
import { isPreflight, writePreflight } from './cors.js';
import type { ProxyDeps } from './deps.js';
import {
  breakResponse,
  requestHasBody,
  responseCompleted,
  type ProxyRequest,
  type ProxyResponse,
} from './exchange-io.js';
import {
  NO_ORIGIN_MESSAGE,
  providerMismatchMessage,
  quotaExceededMessage,
  writeProxyError,
  type ProxyErrorCode,
} from './errors.js';
import { relayedHeaders, responseHasBody, tokenFrom, upstreamHeaders } from './headers.js';
import { KeyPatterns } from './key-encodings.js';
import { unsafePath } from './path-guard.js';
import { StreamRedactor } from './redact.js';
import { parseTarget, upstreamPath } from './route.js';
import { TokenCache, type TokenEntry } from './token-cache.js';
import { logUpstreamFailure, upstreamErrorCode } from './upstream-failure.js';
import { Upstreams, type Upstream } from './upstream.js';
import { NO_USAGE, recordedUsage, reserveBudget, scannerFor, type BudgetAdmission } from './usage-meter.js';
import type { Hold } from '../usage/budget-guard.js';
import type { UsageScanner } from '../usage/usage-scanner.js';
import { isVaultError } from '../vault/vault.js';

/**
 * The proxy's request flow (specification §1, DESIGN §4), in order:
 * route → token (format, lookup, revoked, expired, provider) → origin → IP → decrypt → forward.
 * Everything up to the store lookup is synchronous, and a cached lookup keeps it so until the
 * upstream dispatch. Each request is one `Exchange`, which is also undici's dispatch handler.
 */

/** Status recorded for a request whose client went away before any answer (nginx's convention). */
export const CLIENT_CLOSED_STATUS = 499;

const CLIENT_GONE = new Error('client closed the connection');

/**
 * Refusals that count toward IP backoff (DESIGN §10: every refused 401 and 403), and
 * `provider_mismatch`: a known token used where it does not belong is unauthorized use too.
 */
type DeniedCode =
  | 'missing_token'
  | 'invalid_token'
  | 'token_revoked'
  | 'token_expired'
  | 'provider_mismatch'
  | 'origin_not_allowed'
  | 'ip_not_allowed';

export class ProxyHandler {
  readonly deps: ProxyDeps;
  readonly upstreams: Upstreams;
  readonly tokens: TokenCache;
  readonly trust: IpMatcher | null;
  readonly now: () => number;
  closing = false;

  constructor(deps: ProxyDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.upstreams = new Upstreams(deps.providers, deps.config);
    this.tokens = new TokenCache((digest) => deps.store.tokens.findByDigest(digest), this.now);
    this.trust = deps.config.trustProxy.length === 0 ? null : compileIpMatcher(deps.config.trustProxy);
  }

  /** Forgets cached token lookups: the next request reads the store (revoke, rotation, deletion). */
  invalidateCredentials(): void {
    this.tokens.clear();
    this.deps.usage?.budgets?.forgetAccounts();
  }

  readonly handle = (req: ProxyRequest, res: ProxyResponse): void => {
    // HTTP/2 sessions are sent GOAWAY by the server's close instead.
    if (this.closing && res instanceof ServerResponse) res.shouldKeepAlive = false;
    const ex = new Exchange(this, req, res);
    const target = parseTarget(req.url ?? '');
    const upstream = target === undefined ? undefined : this.upstreams.get(target.providerId);
    if (target !== undefined) ex.path = target.path;
    if (target !== undefined && unsafePath(target.path)) {
      ex.watch();
      ex.refuse('invalid_path');
      return;
    }
    if (upstream === undefined || target === undefined) {
      ex.watch();
      ex.refuse('route_not_found');
      return;
    }
    if (isPreflight(req)) {
      // Preflights carry no token and reach no provider: answered here and not logged as requests.
      writePreflight(res, req.headers.origin as string, req.headers['access-control-request-headers']);
      return;
    }
    ex.upstream = upstream;
    ex.suffix = target.suffix;
    ex.watch();

    const headers = req.headers;
    const token = tokenFrom(
      headers.authorization,
      upstream.tokenHeader === undefined ? undefined : headers[upstream.tokenHeader],
    );
    if (token === null) return ex.deny('missing_token');
    if (!isSanitizedToken(token)) return ex.deny('invalid_token');
    let found: TokenEntry | null | Promise<TokenEntry | null>;
    try {
      found = this.tokens.get(secretDigest(token));
    } catch (err) {
      return ex.storeFailed(err);
    }
    if (found instanceof Promise) {
      found.then(
        (entry) => ex.checkToken(entry),
        (err: unknown) => ex.storeFailed(err),
      );
    } else {
      ex.checkToken(found);
    }
  };
}

class Exchange implements Dispatcher.DispatchHandler {
  readonly #ctx: ProxyHandler;
  readonly req: ProxyRequest;
  readonly res: ProxyResponse;
  readonly requestId: string;
  readonly #start: number;
  readonly #wallStart: number;
  readonly #originHeader: string | undefined;
  readonly #origin: string | undefined;
  readonly #ip: string;
  path = '';
  suffix = '';
  upstream: Upstream | undefined;
  #token: TokenEntry | null = null;
  #authorized = false;
  #forwarded = false;
  #key: Buffer | null = null;
  #keyText = '';
  /** The key's encodings, built with the redactor when the key is decrypted and wiped with it. */
  #patterns: KeyPatterns | null = null;
  #redactor: StreamRedactor | null = null;
  /** The proxy's own answer, for the record; null while the provider's answer is relayed. */
  #errorCode: ProxyErrorCode | null = null;
  #controller: Dispatcher.DispatchController | null = null;
  #clientGone = false;
  #upstreamDone = false;
  #drainHooked = false;
  #addedMs = 0;
  #sentAt = 0;
  #upstreamMs: number | null = null;
  #country: string | null | undefined;
  /** `RateLimit-*` headers for the forwarded response of a rate-limited token. */
  #limitHeaders: readonly string[] | null = null;
  /** Usage read from the answer as it passes (src/usage); null for answers that cannot say any. */
  #scanner: UsageScanner | null = null;
  /** A budgeted request's reservation, settled when it is over; its body replayed after the peek. */
  #hold: Hold | null = null;
  #body: Readable | null = null;
  #requestModel: string | null = null;

  constructor(ctx: ProxyHandler, req: ProxyRequest, res: ProxyResponse) {
    this.#start = performance.now();
    this.#ctx = ctx;
    this.req = req;
    this.res = res;
    this.#wallStart = ctx.now();
    this.requestId = newRequestId(this.#wallStart);
    const headers = req.headers;
    const origin = headers.origin;
    this.#originHeader = origin === undefined || origin === '' ? undefined : origin;
    this.#origin = requestOrigin(origin, headers.referer);
    const xff = headers['x-forwarded-for'];
    this.#ip = clientIp(
      req.socket.remoteAddress ?? '',
      typeof xff === 'string' ? xff : xff?.join(','),
      ctx.trust,
    );
  }

  /** From here on the request is logged exactly once, when its response is over (or aborted). */
  watch(): void {
    this.res.once('close', this.#onClose);
  }

  refuse(code: ProxyErrorCode, extraHeaders?: readonly string[] | null, message?: string): void {
    writeProxyError(this.res, code, this.requestId, this.#originHeader, extraHeaders, message);
    this.#errorCode = code;
    this.#addedMs = performance.now() - this.#start;
  }

  storeFailed(err: unknown): void {
    this.#ctx.deps.logger?.error({ err: errorSummary(err) }, 'token lookup failed');
    if (!this.#clientGone) this.refuse('store_unavailable');
  }

  checkToken(entry: TokenEntry | null): void {
    if (this.#clientGone) return;
    if (entry === null) return this.deny('invalid_token');
    this.#token = entry;
    const token = entry.token;
    if (token.status === 'revoked' || entry.ciphertext === null) return this.deny('token_revoked');
    if (token.status === 'expired' || entry.expiresAtMs <= this.#ctx.now()) return this.deny('token_expired');
    const upstream = this.upstream as Upstream;
    if (token.provider !== upstream.id) return this.deny('provider_mismatch');
    if (!entry.origins.matches(this.#origin)) return this.deny('origin_not_allowed');
    if (entry.ips !== null && !entry.ips.matches(this.#ip)) return this.deny('ip_not_allowed');
    this.#authorized = true;
    const limits = this.#ctx.deps.limits;
    if (limits === undefined) return this.#proceed();
    // DESIGN §4 order after the origin/IP checks: rate limit, then quota, then forward.
    let admission: Admission | Promise<Admission> | null;
    try {
      limits.observe(token, this.#wallStart, this.#ip, this.#countryOf(), this);
      admission = limits.admit(token, this.#wallStart);
    } catch (err) {
      this.#ctx.deps.logger?.error({ err: errorSummary(err) }, 'limits failed; forwarding');
      admission = null;
    }
    if (admission instanceof Promise) {
      admission.then(
        (a) => this.#admitted(a),
        (err: unknown) => {
          this.#ctx.deps.logger?.error({ err: errorSummary(err) }, 'limits failed; forwarding');
          this.#admitted(null);
        },
      );
    } else {
      this.#admitted(admission);
    }
  }

  /**
   * A refused 401/403, unless the IP is in backoff: then 429 `ip_backoff` (DESIGN §4 and §10). Either
   * way the attempt counts toward the IP's backoff.
   */
  deny(code: DeniedCode): void {
    const limits = this.#ctx.deps.limits;
    if (limits === undefined) return this.#denied(code, 0);
    let wait: number | Promise<number>;
    try {
      wait = limits.unauthorized(this.#ip, this.#wallStart);
    } catch (err) {
      this.#ctx.deps.logger?.error({ err: errorSummary(err) }, 'ip backoff failed');
      wait = 0;
    }
    if (wait instanceof Promise) {
      wait.then(
        (w) => this.#denied(code, w),
        (err: unknown) => {
          this.#ctx.deps.logger?.error({ err: errorSummary(err) }, 'ip backoff failed');
          this.#denied(code, 0);
        },
      );
    } else {
      this.#denied(code, wait);
    }
  }

  #denied(code: DeniedCode, retryAfter: number): void {
    if (this.#clientGone) return;
    if (retryAfter > 0) {
      this.refuse('ip_backoff', ['Retry-After', String(retryAfter)]);
      // Logged in the anomaly log when a token is known; coalesced into the breach alerts' counts.
      if (this.#token !== null) this.#unauthorized('ip_backoff');
      return;
    }
    if (code === 'origin_not_allowed') {
      const headers = this.req.headers;
      const none = headers.origin === undefined && headers.referer === undefined;
      this.refuse(code, null, none ? NO_ORIGIN_MESSAGE : undefined);
      this.#unauthorized(code);
    } else if (code === 'provider_mismatch') {
      const entry = this.#token as TokenEntry;
      const pathProvider = (this.upstream as Upstream).id;
      this.refuse(code, null, providerMismatchMessage(entry.token.provider, pathProvider));
      // A mismatch from an allowed origin is most likely the owner's own bug: logged and counted,
      // but only an alert when the origin is not allowed either (DESIGN §6).
      this.#unauthorized(code, !entry.origins.matches(this.#origin));
    } else {
      this.refuse(code);
      if (code === 'ip_not_allowed') this.#unauthorized(code);
    }
  }

  #admitted(admission: Admission | null): void {
    if (this.#clientGone) return;
    if (admission !== null) {
      if (admission.refuse !== null) {
        const quota = admission.quota;
        return this.refuse(
          admission.refuse,
          admission.headers,
          quota === undefined ? undefined : quotaExceededMessage(quota.limit, quota.resetsAt),
        );
      }
      this.#limitHeaders = admission.headers;
    }
    this.#proceed();
  }

  /** Budgets last (issue 19): a reservation only for a token or account that has a budget. */
  #proceed(): void {
    const token = (this.#token as TokenEntry).token;
    const guard = this.#ctx.deps.usage?.budgets;
    if (guard === undefined) return this.#send();
    let applies: boolean | Promise<boolean>;
    try {
      applies = guard.applies(token, this.#wallStart);
    } catch (err) {
      this.#ctx.deps.logger?.error({ err: errorSummary(err) }, 'budgets failed; forwarding');
      applies = false;
    }
    if (applies === false) return this.#send();
    const reserve = (): void => {
      const hasBody = requestHasBody(this.req);
      const usage = this.#ctx.deps.usage as NonNullable<ProxyDeps['usage']>;
      const provider = (this.upstream as Upstream).id;
      reserveBudget(guard, usage, this.req, token, provider, hasBody, this.#wallStart).then(
        (a) => this.#reserved(a),
        (err: unknown) => {
          // Like quotas, a store outage admits: the token was verified, a budget is a spend control.
          this.#ctx.deps.logger?.error({ err: errorSummary(err) }, 'budget reservation failed; forwarding');
          this.#send();
        },
      );
    };
    if (applies === true) return reserve();
    applies.then(
      (a) => (a ? reserve() : this.#send()),
      () => this.#send(),
    );
  }

  #reserved(a: BudgetAdmission): void {
    if (a === null) return; // the client left while its body was read
    if (this.#clientGone) {
      // Already recorded (on close) while the reservation was made: release it here.
      if (a.ok) this.#ctx.deps.usage?.budgets?.settle(a.hold, NO_USAGE, this.#ctx.now());
      return;
    }
    if (!a.ok) return this.refuse('budget_exceeded', a.headers, a.message);
    this.#hold = a.hold;
    this.#body = a.body;
    this.#requestModel = a.model;
    this.#send();
  }

  #send(): void {
    if (this.#clientGone) return;
    const entry = this.#token as TokenEntry;
    const token = entry.token;
    this.#forward(this.upstream as Upstream, token.keyId, token.accountId, entry.ciphertext as Buffer);
  }

  /** The request as the anomaly log records it; built only when an anomaly is found. */
  observed(): ObservedRequest {
    const token = (this.#token as TokenEntry).token;
    return {
      requestId: this.requestId,
      accountId: token.accountId,
      tokenId: token.id,
      origin: this.#origin ?? null,
      ip: this.#ip,
      country: this.#countryOf(),
      path: recordPath(this.path),
    };
  }

  #unauthorized(reason: UnauthorizedReason, alert?: boolean): void {
    const token = (this.#token as TokenEntry).token;
    try {
      this.#ctx.deps.onUnauthorized({
        requestId: this.requestId,
        timestamp: new Date(this.#wallStart).toISOString(),
        accountId: token.accountId,
        tokenId: token.id,
        origin: this.#origin ?? null,
        ip: this.#ip,
        country: this.#countryOf(),
        path: recordPath(this.path),
        reason,
        ...(alert === undefined ? {} : { alert }),
      });
    } catch (err) {
      this.#ctx.deps.logger?.error({ err: errorSummary(err) }, 'unauthorized-attempt handler failed');
    }
  }

  #forward(upstream: Upstream, keyId: string, accountId: string, ciphertext: Buffer): void {
    this.#ctx.deps.vault.decrypt(ciphertext, { keyId, accountId }).then(
      (key) => this.#forwardWith(upstream, key),
      (err: unknown) => {
        // An HSM that cannot be reached is a 503 the client may retry, never a 500 (DESIGN §8).
        const unavailable = isVaultError(err) && err.code === 'kek_unavailable';
        this.#ctx.deps.logger?.error(
          { err: errorSummary(err), key_id: keyId },
          unavailable ? 'KEK unavailable: cannot decrypt provider key' : 'cannot decrypt provider key',
        );
        if (!this.#clientGone) this.refuse(unavailable ? 'kek_unavailable' : 'internal_error');
      },
    );
  }

  #forwardWith(upstream: Upstream, key: Buffer): void {
    if (this.#clientGone) {
      key.fill(0);
      return;
    }
    this.#key = key;
    if (key.length === 0) {
      this.#zeroKey();
      return this.refuse('internal_error');
    }
    // Header values are strings, and JS strings cannot be wiped: this copy lives until the GC takes
    // it. The Buffer, which is what the vault hands out, is zeroed as soon as the request is over.
    this.#keyText = key.toString('latin1');
    const patterns = new KeyPatterns(key);
    this.#patterns = patterns;
    this.#redactor = new StreamRedactor(patterns.patterns);
    const req = this.req;
    const headers = upstreamHeaders(
      req.rawHeaders,
      req.headers.connection,
      upstream.authHeader,
      upstream.bearer ? `Bearer ${this.#keyText}` : this.#keyText,
    );
    const method = req.method ?? 'GET';
    const hasBody = requestHasBody(req);
    this.#forwarded = true;
    this.#sentAt = performance.now();
    this.#addedMs = this.#sentAt - this.#start;
    upstream.pool.dispatch(
      {
        path: upstreamPath(upstream.basePath, this.suffix),
        method,
        headers,
        body: hasBody ? (this.#body ?? req) : null,
      },
      this,
    );
  }

  // ---- undici dispatch handler -------------------------------------------------------------

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#clientGone) controller.abort(CLIENT_GONE);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    upstreamHeaders: Record<string, string | string[] | undefined>,
  ): void {
    if (status < 200) return; // 1xx interim answers are not relayed
    const arrived = performance.now();
    this.#upstreamMs = arrived - this.#sentAt;
    const res = this.res;
    if (this.#clientGone || res.destroyed) {
      controller.abort(CLIENT_GONE);
      return;
    }
    const hasBody = responseHasBody(this.req.method ?? 'GET', status);
    const out = relayedHeaders(
      upstreamHeaders,
      hasBody,
      (this.#patterns as KeyPatterns).texts,
      this.#originHeader,
      this.requestId,
      this.#limitHeaders,
    );
    res.writeHead(status, out);
    if (hasBody) this.#scanner = scannerFor(upstreamHeaders['content-type']);
    // A stream's first bytes may be a while coming: let the client see the status now.
    if (hasBody && upstreamHeaders['content-length'] === undefined) res.flushHeaders();
    this.#addedMs += performance.now() - arrived;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const res = this.res;
    if (this.#clientGone || res.destroyed) return;
    this.#scanner?.write(chunk);
    const out = (this.#redactor as StreamRedactor).write(chunk);
    if (out.length === 0) return;
    if (!res.write(out)) {
      controller.pause();
      if (!this.#drainHooked) {
        this.#drainHooked = true;
        res.on('drain', this.#onDrain);
      }
    }
  }

  onResponseEnd(): void {
    const tail = (this.#redactor as StreamRedactor).flush();
    this.#upstreamFinished();
    if (this.#clientGone || this.res.destroyed) return;
    if (tail.length > 0) this.res.end(tail);
    else this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    this.#upstreamFinished();
    const res = this.res;
    if (this.#clientGone || res.destroyed) return;
    const code = upstreamErrorCode(err);
    if (code === 'internal_error') {
      this.#ctx.deps.logger?.error({ err: errorSummary(err) }, 'upstream request failed');
    } else if (this.#ctx.deps.logger !== undefined) {
      const provider = (this.upstream as Upstream).id;
      logUpstreamFailure(this.#ctx.deps.logger, err, this.requestId, provider, code, res.headersSent);
    }
    if (res.headersSent) {
      // The provider broke off mid-answer: end the client's response as broken too, never hang it.
      breakResponse(res);
      return;
    }
    const failedAt = performance.now();
    writeProxyError(res, code, this.requestId, this.#originHeader);
    this.#errorCode = code;
    this.#addedMs += performance.now() - failedAt;
  }

  // ---- end of the exchange -----------------------------------------------------------------

  readonly #onDrain = (): void => {
    this.#controller?.resume();
  };

  readonly #onClose = (): void => {
    if (!responseCompleted(this.res)) {
      this.#clientGone = true;
      if (this.#forwarded && !this.#upstreamDone) this.#controller?.abort(CLIENT_GONE);
    }
    this.#zeroKey();
    this.#record();
  };

  #upstreamFinished(): void {
    this.#upstreamDone = true;
    this.#zeroKey();
  }

  #zeroKey(): void {
    if (this.#key !== null) {
      this.#key.fill(0);
      this.#key = null;
    }
    if (this.#patterns !== null) {
      this.#patterns.wipe();
      this.#patterns = null;
    }
  }

  #countryOf(): string | null {
    if (this.#country === undefined) {
      try {
        this.#country = this.#ctx.deps.countryOf(this.req.headers, this.#ip);
      } catch {
        this.#country = null;
      }
    }
    return this.#country;
  }

  #record(): void {
    const res = this.res;
    const deps = this.#ctx.deps;
    const status = res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS;
    const token = this.#token?.token;
    const provider = this.upstream?.id ?? null;
    const usage =
      this.#forwarded && provider !== null
        ? recordedUsage(deps.usage, this.#scanner, provider, this.#requestModel, this.path)
        : NO_USAGE;
    // An upstream error or a client gone before any answer spent nothing: the reservation is released.
    if (this.#hold !== null) {
      const answered = this.#upstreamMs !== null;
      deps.usage?.budgets?.settle(this.#hold, answered ? usage : NO_USAGE, this.#ctx.now());
      this.#hold = null;
    }
    try {
      deps.requestLog.write({
        requestId: this.requestId,
        timestamp: new Date(this.#wallStart).toISOString(),
        accountId: token?.accountId ?? null,
        tokenId: token?.id ?? null,
        provider,
        origin: this.#origin ?? null,
        ip: this.#ip,
        country: this.#countryOf(),
        pop: deps.config.pop,
        path: recordPath(this.path),
        status,
        authorized: this.#authorized,
        latencyMs: Math.round(this.#addedMs),
        forwarded: this.#forwarded,
        errorCode: this.#errorCode,
        model: usage.model,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        costMicros: usage.costMicros,
      });
      deps.metrics.observe(provider ?? 'unknown', status, this.#addedMs, this.#upstreamMs);
    } catch (err) {
      deps.logger?.error({ err: errorSummary(err) }, 'request log or metrics failed');
    }
  }
}
