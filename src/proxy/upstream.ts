import { readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { Pool } from 'undici';
import { ConfigError } from '../config/config-error.js';
import type { Provider, ProviderRegistry } from '../providers/providers.js';
import { settlesWithin } from '../runtime/settles-within.js';
import type { ProxyConfig } from './deps.js';

/** A provider prepared for the hot path: its pool, base path and how the real key is presented. */
export interface Upstream {
  readonly id: string;
  readonly pool: Pool;
  /** Path of the provider's base_url without a trailing slash ('' for none). */
  readonly basePath: string;
  /** Lower-case header that carries the real key upstream. */
  readonly authHeader: string;
  readonly bearer: boolean;
  /**
   * The provider's own key header, read as the caller's token too (DESIGN §10); undefined for bearer
   * providers, which accept the token in `Authorization` only.
   */
  readonly tokenHeader: string | undefined;
}

/**
 * One keep-alive pool per provider origin, created once. Each pool is bound to its origin, so a
 * request can only ever go where its provider's base_url points: nothing in a request chooses a host.
 */
export class Upstreams {
  readonly #byId = new Map<string, Upstream>();
  readonly #pools = new Map<string, Pool>();

  constructor(providers: ProviderRegistry, config: ProxyConfig) {
    // Built once: passing `ca` to every connect would make Node parse all ~140 root certificates
    // again for each new upstream connection (tens of ms of CPU each, measured in `npm run bench`).
    const secureContext: SecureContext | undefined =
      config.providerCa === undefined
        ? undefined
        : createSecureContext({ ca: [...rootCertificates, readFileSync(config.providerCa, 'utf8')] });
    for (const provider of providers.list()) {
      const url = new URL(provider.baseUrl);
      // The config loader already refuses other schemes; this keeps a programmatic registry honest too.
      if (url.protocol !== 'https:') {
        throw new ConfigError(
          `Setting "providers": provider "${provider.id}" base_url must start with https:// (upstream is TLS only).`,
        );
      }
      let pool = this.#pools.get(url.origin);
      if (pool === undefined) {
        pool = new Pool(url.origin, {
          connect: {
            ...(secureContext === undefined ? {} : { secureContext }),
            timeout: config.upstreamConnectTimeoutMs,
          },
          headersTimeout: config.upstreamHeadersTimeoutMs,
          bodyTimeout: config.upstreamBodyTimeoutMs,
          keepAliveTimeout: 30_000,
          keepAliveMaxTimeout: 600_000,
          // Each connection is a descriptor: past the cap a request waits in the pool for a free
          // one, where without it a burst opened one per request until the process ran out
          // (EMFILE) and answered 502 to requests it could have served.
          ...(config.connections.upstream === undefined ? {} : { connections: config.connections.upstream }),
        });
        this.#pools.set(url.origin, pool);
      }
      this.#byId.set(provider.id, prepared(provider, pool, url.pathname));
    }
  }

  get(id: string): Upstream | undefined {
    return this.#byId.get(id);
  }

  /** The provider ids, in the order they were configured (for a refusal that lists them). */
  ids(): string[] {
    return [...this.#byId.keys()];
  }

  /** Waits for in-flight upstream requests; after `graceMs`, aborts whatever is left. */
  async close(graceMs: number): Promise<void> {
    const pools = [...this.#pools.values()];
    const drained = Promise.allSettled(pools.map((p) => p.close()));
    if (!(await settlesWithin(drained, graceMs))) await Promise.allSettled(pools.map((p) => p.destroy()));
  }
}

function prepared(provider: Provider, pool: Pool, pathname: string): Upstream {
  const basePath = pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
  const bearer = provider.auth.kind === 'bearer';
  const authHeader = provider.auth.kind === 'bearer' ? 'authorization' : provider.auth.header;
  return {
    id: provider.id,
    pool,
    basePath,
    authHeader,
    bearer,
    tokenHeader: bearer ? undefined : authHeader,
  };
}
