import { ServerResponse } from 'node:http';
import { isSanitizedToken, secretDigest } from '../ids/formats.js';
import { compileIpMatcher, type IpMatcher } from '../rules/ip-match.js';
import { isPreflight, writePreflight } from './cors.js';
import type { ProxyDeps } from './deps.js';
import { routeNotFoundMessage } from './errors.js';
import { Exchange } from './exchange.js';
import type { ProxyRequest, ProxyResponse } from './exchange-io.js';
import { tokenFrom } from './headers.js';
import { unsafePath } from './path-guard.js';
import { parseTarget } from './route.js';
import { TokenCache, type TokenEntry } from './token-cache.js';
import { Upstreams } from './upstream.js';
import { DescriptorAlarm } from '../observability/descriptor-alarm.js';

/**
 * The proxy's request flow (specification §1, DESIGN §4), in order: route → token (format, lookup,
 * revoked, expired, provider) → origin → IP → rate limit → quota → budget → decrypt → forward.
 * Everything up to the store lookup is synchronous, and a cached lookup keeps it so until the
 * upstream dispatch. Each request is one `Exchange` (exchange.ts); a request that is let through is
 * forwarded by a `Relay` (relay.ts), undici's dispatch handler for the provider's answer.
 */

export class ProxyHandler {
  readonly deps: ProxyDeps;
  readonly upstreams: Upstreams;
  readonly tokens: TokenCache;
  readonly trust: IpMatcher | null;
  readonly now: () => number;
  /** Says, at most once a minute, that connections hit their cap or descriptors ran out. */
  readonly descriptors: DescriptorAlarm;
  closing = false;
  /** Requests received, and those whose response is not over: for the idle memory reducer. */
  requests = 0;
  inFlight = 0;

  constructor(deps: ProxyDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.upstreams = new Upstreams(deps.providers, deps.config);
    this.descriptors = new DescriptorAlarm(deps.logger, deps.config.connections, 'proxy');
    this.tokens = new TokenCache((digest) => deps.store.tokens.findByDigest(digest), this.now);
    this.trust = deps.config.trustProxy.length === 0 ? null : compileIpMatcher(deps.config.trustProxy);
  }

  /** Forgets cached token lookups: the next request reads the store (revoke, rotation, deletion). */
  invalidateCredentials(): void {
    this.tokens.clear();
    this.deps.usage?.budgets?.forgetAccounts();
  }

  readonly handle = (req: ProxyRequest, res: ProxyResponse): void => {
    this.requests++;
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
      ex.refuse('route_not_found', null, routeNotFoundMessage(target?.providerId, this.upstreams.ids()));
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
