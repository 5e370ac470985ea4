import type { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { errorSummary } from '../errors/summary.js';
import { newRequestId } from '../ids/formats.js';
import type { ObservedRequest } from '../limits/anomaly-detector.js';
import type { Admission } from '../limits/proxy-limits.js';
import { MAX_RECORD_PATH_BYTES } from '../requestlog/record.js';
import { clientIp, isTrustedPeer } from '../rules/ip-match.js';
import { requestOrigin } from '../rules/origin-match.js';
import type { Hold } from '../usage/budget-guard.js';
import { isVaultError } from '../vault/vault.js';
import type { ProxyDeps } from './deps.js';
import {
  bodyToForward,
  bodyToRead,
  requestHasBody,
  responseCompleted,
  type ProxyRequest,
  type ProxyResponse,
} from './exchange-io.js';
import { deny } from './denial.js';
import { observedRequest, writeRecord } from './exchange-record.js';
import { quotaExceededMessage, writeProxyError, type DeniedCode, type ProxyErrorCode } from './errors.js';
import type { ProxyHandler } from './handler.js';
import type { DescriptorAlarm } from '../observability/descriptor-alarm.js';
import { Relay, type RelayOwner } from './relay.js';
import { collectBody, collectedLength } from './request-body.js';
import type { TokenEntry } from './token-cache.js';
import type { Upstream } from './upstream.js';
import {
  admitBudget,
  NO_USAGE,
  recordedUsage,
  settleHold,
  UNBUDGETED,
  wasForwarded,
  type BudgetAdmission,
} from './usage-meter.js';

/** Status recorded for a request whose client went away before any answer (nginx's convention). */
export const CLIENT_CLOSED_STATUS = 499;

/**
 * One request through the proxy, from its token checks to its record (DESIGN §4 order): token →
 * origin → IP → rate limit → quota → budget → decrypt. A request that passes them all is handed to a
 * `Relay` with the decrypted key. It is logged exactly once, when its response closes.
 */
export class Exchange implements RelayOwner {
  readonly #ctx: ProxyHandler;
  readonly req: ProxyRequest;
  readonly res: ProxyResponse;
  readonly requestId: string;
  readonly start: number;
  /** Wall-clock start (ms since the epoch): the record's and the anomaly log's timestamp. */
  readonly wallStart: number;
  readonly originHeader: string | undefined;
  /** The origin the checks use: the Origin header, else the Referer's origin. */
  readonly origin: string | undefined;
  readonly ip: string;
  path = '';
  suffix = '';
  upstream: Upstream | undefined;
  #token: TokenEntry | null = null;
  #authorized = false;
  /** The plan quota counted this request: given back when it is not forwarded after all. */
  #quotaCounted = false;
  /** The forwarded leg, once the key is decrypted; null for a request that was not forwarded. */
  #relay: Relay | null = null;
  /** The proxy's own answer, for the record; null while the provider's answer is relayed. */
  errorCode: ProxyErrorCode | null = null;
  #clientGone = false;
  addedMs = 0;
  #country: string | null | undefined;
  /** `RateLimit-*` headers for the forwarded response of a rate-limited token. */
  limitHeaders: readonly string[] | null = null;
  /** A budgeted request's reservation, settled when it is over. */
  #hold: Hold | null = null;
  /**
   * What goes upstream as the body, once known: a small body read whole (request-body.ts), a budget
   * peek's body, or the request itself, streamed; null until then, and for a request without one.
   */
  #body: Buffer | Readable | null = null;
  /** Time spent waiting for the client's body before forwarding: the client's time, not ours. */
  bodyWaitMs = 0;
  #requestModel: string | null = null;

  constructor(ctx: ProxyHandler, req: ProxyRequest, res: ProxyResponse) {
    this.start = performance.now();
    this.#ctx = ctx;
    this.req = req;
    this.res = res;
    this.wallStart = ctx.now();
    this.requestId = newRequestId(this.wallStart);
    if ('requestId' in res) res.requestId = this.requestId; // an H2Response (h2-stream.ts)
    const headers = req.headers;
    const origin = headers.origin;
    this.originHeader = origin === undefined || origin === '' ? undefined : origin;
    this.origin = requestOrigin(origin, headers.referer);
    const xff = headers['x-forwarded-for'];
    this.ip = clientIp(
      req.socket.remoteAddress ?? '',
      typeof xff === 'string' ? xff : xff?.join(','),
      ctx.trust,
    );
  }

  get clientGone(): boolean {
    return this.#clientGone;
  }

  /** The token's cache entry once the lookup found one; null before, and for an unknown token. */
  get token(): TokenEntry | null {
    return this.#token;
  }

  get deps(): ProxyDeps {
    return this.#ctx.deps;
  }

  get logger(): Logger | undefined {
    return this.#ctx.deps.logger;
  }

  get descriptors(): DescriptorAlarm {
    return this.#ctx.descriptors;
  }

  /** From here on the request is logged exactly once, when its response is over (or aborted). */
  watch(): void {
    this.#ctx.inFlight++;
    this.res.once('close', this.#onClose);
  }

  refuse(code: ProxyErrorCode, extraHeaders?: readonly string[] | null, message?: string): void {
    writeProxyError(this.res, code, this.requestId, this.originHeader, extraHeaders, message);
    this.errorCode = code;
    this.addedMs = performance.now() - this.start - this.bodyWaitMs;
  }

  storeFailed(err: unknown): void {
    this.logError(err, 'token lookup failed');
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
    if (!entry.origins.matches(this.origin)) return this.deny('origin_not_allowed');
    if (entry.ips !== null && !entry.ips.matches(this.ip)) return this.deny('ip_not_allowed');
    this.#authorized = true;
    const limits = this.#ctx.deps.limits;
    if (limits === undefined) return this.#proceed();
    // DESIGN §4 order after the origin/IP checks: rate limit, then quota, then forward.
    let admission: Admission | Promise<Admission> | null;
    try {
      limits.observe(token, this.wallStart, this.ip, this.#countryOf(), this);
      admission = limits.admit(token, this.wallStart);
    } catch (err) {
      this.logError(err, 'limits failed; forwarding');
      admission = null;
    }
    if (admission instanceof Promise) {
      admission.then(
        (a) => this.#admitted(a),
        (err: unknown) => {
          this.logError(err, 'limits failed; forwarding');
          this.#admitted(null);
        },
      );
    } else {
      this.#admitted(admission);
    }
  }

  /** A refused 401/403, or 429 `ip_backoff` (denial.ts). */
  deny(code: DeniedCode): void {
    deny(this, code);
  }

  #admitted(admission: Admission | null): void {
    if (this.#clientGone) {
      // Already recorded (on close) while the limits answered: a count they made is given back here.
      if (admission?.counted === true)
        this.#ctx.deps.limits?.uncount((this.#token as TokenEntry).token, this.#ctx.now());
      return;
    }
    if (admission !== null) {
      if (admission.refuse !== null) {
        const quota = admission.quota;
        return this.refuse(
          admission.refuse,
          admission.headers,
          quota === undefined ? undefined : quotaExceededMessage(quota.limit, quota.resetsAt),
        );
      }
      this.limitHeaders = admission.headers;
      this.#quotaCounted = admission.counted === true;
    }
    this.#proceed();
  }

  /** Budgets last (issue 19): a reservation only for a token or account that has a budget. */
  #proceed(): void {
    const guard = this.#ctx.deps.usage?.budgets;
    if (guard === undefined) return this.#send();
    const token = (this.#token as TokenEntry).token;
    let applies: boolean | Promise<boolean>;
    try {
      applies = guard.applies(token, this.wallStart);
    } catch (err) {
      this.logError(err, 'budgets failed; forwarding');
      applies = false;
    }
    if (applies === false) return this.#send();
    const usage = this.#ctx.deps.usage as NonNullable<ProxyDeps['usage']>;
    const provider = (this.upstream as Upstream).id;
    admitBudget(applies, guard, usage, this.req, token, provider, this.wallStart).then(
      (a) => this.#reserved(a),
      (err: unknown) => {
        // Like quotas, a store outage admits: the token was verified, a budget is a spend control.
        this.logError(err, 'budget reservation failed; forwarding');
        this.#send();
      },
    );
  }

  #reserved(a: BudgetAdmission): void {
    if (a === null) return; // the client left while its body was read
    if (a === UNBUDGETED) return this.#send();
    if (this.#clientGone) {
      // Already recorded (on close) while the reservation was made: release it here.
      if (a.ok) this.#ctx.deps.usage?.budgets?.release(a.hold, this.#ctx.now());
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
    if (this.#body === null && requestHasBody(this.req)) {
      const length = collectedLength(this.req.headers);
      if (length === null) {
        this.#body = bodyToForward(this.req);
      } else {
        const whole = collectBody(bodyToRead(this.req), length);
        if (whole instanceof Promise) {
          const waitFrom = performance.now();
          void whole.then((body) => this.#collected(body, waitFrom));
          return;
        }
        this.#body = whole;
      }
    }
    const entry = this.#token as TokenEntry;
    const token = entry.token;
    this.#forward(this.upstream as Upstream, token.keyId, token.accountId, entry.ciphertext as Buffer);
  }

  #collected(body: Buffer | null, waitFrom: number): void {
    this.bodyWaitMs = performance.now() - waitFrom;
    if (this.#clientGone) return;
    // The client went away mid-body, or sent other than it declared: nothing sound to forward.
    // Destroying the response breaks it: HTTP/1.1 loses its connection, an h2 stream is reset.
    if (body === null) {
      this.res.destroy();
      return;
    }
    this.#body = body;
    this.#send();
  }

  /** The request as the anomaly log records it (a refusal's cut shorter); built only on an anomaly. */
  observed(maxBytes = MAX_RECORD_PATH_BYTES): ObservedRequest {
    return observedRequest(this, (this.#token as TokenEntry).token, this.#countryOf(), maxBytes);
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
    if (key.length === 0) return this.refuse('internal_error');
    let relay: Relay;
    try {
      relay = new Relay(this, upstream, key);
    } catch (err) {
      // Building the key's encodings failed (memory): the key must not outlive the request anyway.
      key.fill(0);
      this.logError(err, 'cannot prepare the forwarded request');
      return this.refuse('internal_error');
    }
    this.#relay = relay;
    relay.start(this.suffix, this.#body);
  }

  // ---- end of the exchange -----------------------------------------------------------------

  readonly #onClose = (): void => {
    this.#ctx.inFlight--;
    if (!responseCompleted(this.res)) this.#clientGone = true;
    if (this.#relay !== null) {
      if (this.#clientGone) this.#relay.clientClosed();
      else this.#relay.wipeKey();
    }
    this.#record();
  };

  logError(err: unknown, message: string): void {
    this.#ctx.deps.logger?.error({ err: errorSummary(err) }, message);
  }

  #countryOf(): string | null {
    if (this.#country !== undefined) return this.#country;
    const trust = this.#ctx.trust;
    try {
      const edge = trust !== null && isTrustedPeer(this.req.socket.remoteAddress ?? '', trust);
      return (this.#country = this.#ctx.deps.countryOf(this.req.headers, this.ip, edge));
    } catch {
      return (this.#country = null);
    }
  }

  #record(): void {
    const res = this.res;
    const deps = this.#ctx.deps;
    const status = res.headersSent ? res.statusCode : CLIENT_CLOSED_STATUS;
    const token = this.#token?.token;
    const provider = this.upstream?.id ?? null;
    const relay = this.#relay;
    const usage =
      relay !== null && provider !== null
        ? recordedUsage(deps.usage, relay.scanner, provider, this.#requestModel, this.path)
        : NO_USAGE;
    const upstreamMs = relay === null ? null : relay.upstreamMs;
    const forwarded = wasForwarded(relay !== null, this.errorCode);
    // Only forwarded requests use the plan quota (docs/limits.md).
    if (this.#quotaCounted && !forwarded && token !== undefined) deps.limits?.uncount(token, this.#ctx.now());
    if (this.#hold !== null) {
      settleHold(deps.usage?.budgets, this.#hold, usage, relay, status, this.#ctx.now());
      this.#hold = null;
    }
    const country = this.#countryOf();
    writeRecord(this, token, provider, status, forwarded, this.#authorized, country, usage, upstreamMs);
  }
}
