import type {
  FastifyInstance,
  FastifyBaseLogger,
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { HostResolver } from '../events/address-guard.js';
import type { Counters } from '../limits/counters.js';
import type { ProviderRegistry } from '../providers/providers.js';
import type { PlanTable } from '../accounts/plans.js';
import type { Actor } from '../store/access-records.js';
import type { AccountRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { Vault } from '../vault/vault.js';
import type { IpMatcher } from '../rules/ip-match.js';

/** What the management API needs from the rest of the server, passed in once at start. */
export interface ApiDeps {
  readonly store: Store;
  readonly vault: Vault;
  readonly providers: ProviderRegistry;
  /** Base of `proxy_base_url` (DESIGN §10), without a trailing slash. */
  readonly publicProxyUrl: string;
  readonly now: () => Date;
  /** Plan limits in force (the built-in table with the config file's overrides). */
  readonly plans: PlanTable;
  /**
   * Called after a token is created or revoked and after a key is rotated or deleted, once the store
   * has the change: the proxy drops its cached token lookups so the next request sees it.
   */
  readonly onCredentialsChanged?: (() => void) | undefined;
  /** Called after the API committed events of its own (a revoke), to wake the delivery worker. */
  readonly onEventsCommitted?: (() => void) | undefined;
  /** `allow_private_webhooks`: webhook URLs on private, loopback or link-local addresses (default false). */
  readonly allowPrivateWebhooks?: boolean | undefined;
  /**
   * `public_api_url`: its origin is the dashboard's own origin for the session cookie's CSRF rule;
   * without it, `https://<Host>` of each request (DESIGN §12).
   */
  readonly publicApiUrl?: string | undefined;
  /**
   * Reads the store's migrations for /readyz, and logs once a newer tokenproxy upgraded them
   * (src/store/schema-watch.ts); the store is asked directly when absent.
   */
  readonly newerSchema?: (() => Promise<string | undefined>) | undefined;
  /** Dependencies that work but degraded (e.g. `redis` away), named by /readyz; none when absent. */
  readonly degraded?: (() => readonly string[]) | undefined;
  /** Resolves webhook host names for the creation-time address check (tests inject one). */
  readonly resolveWebhookHost?: HostResolver | undefined;
  /**
   * The limits' counters (shared through Redis with `redis`), for the dashboard sign-in backoff;
   * in-memory ones of the API's own when absent.
   */
  readonly counters?: Counters | undefined;
  /** `trust_proxy`: the proxies whose X-Forwarded-For is believed; the socket address without. */
  readonly trustProxy?: IpMatcher | null | undefined;
  /** `log_retention` and `rollup_retention` as `GET /v1/account` shows them (default 30d, 400d). */
  readonly retention?: { readonly logs: string; readonly rollups: string } | undefined;
}

export type ApiServer = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the API-key check on every /v1 route. */
    account: AccountRecord;
    /** Who is making the request (API key, dashboard session), for the audit log. */
    actor: Actor;
    /**
     * The caller's address, read as the proxy reads it (`trust_proxy`, DESIGN §4): behind a load
     * balancer the socket address is the balancer's, shared by every user.
     */
    clientIp: string;
  }
}
