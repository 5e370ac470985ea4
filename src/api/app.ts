import { HEAD_TIMEOUT_MS, REQUEST_TIMEOUT_MS, timeoutCheckIntervalMs } from '../runtime/request-timeouts.js';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Server as HttpsServer } from 'node:https';
import Fastify, { LogController, type FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import { TokenProxyError } from '../errors/tokenproxy-error.js';
import { isApiKey, newRequestId, secretDigest } from '../ids/formats.js';
import type { ApiDeps, ApiServer } from './context.js';
import { RouteMethods } from './allowed-methods.js';
import { sendError, toTokenProxyError } from './error-handler.js';
import { IDEMPOTENT_METHODS, registerIdempotency } from './idempotency.js';
import { IdempotencyHeaders, errorResponses } from './openapi-errors.js';
import { coerceLimit } from './pagination.js';
import { unexpectedBody, unexpectedQuery } from './unexpected-input.js';
import { repeatedQueryParameter } from './repeated-query.js';
import { registerJsonBodies } from './json-body.js';
import type { ConnectionLimits } from '../config/connection-limits.js';
import { DescriptorAlarm } from '../observability/descriptor-alarm.js';
import { capConnections } from '../runtime/connection-cap.js';
import { clientErrorHandler, frameworkError, isClientAbort } from './listener-errors.js';
import { dashboardRoutes } from './dashboard-assets.js';
import { accountRoutes } from './routes/account.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { auditRoutes } from './routes/audit.js';
import { deliveryRoutes } from './routes/deliveries.js';
import { anomalyRoutes } from './routes/anomalies.js';
import { eventRoutes } from './routes/events.js';
import { healthRoutes } from './routes/health.js';
import { keyRoutes } from './routes/keys.js';
import { logRoutes } from './routes/logs.js';
import { metricsRoutes } from './routes/metrics.js';
import { providerRoutes } from './routes/providers.js';
import { SESSION_ROUTE, sessionRoutes } from './routes/session.js';
import { tokenChangeRoutes } from './routes/token-changes.js';
import { usageRoutes } from './routes/usage.js';
import { authenticateRequest, requireScope, type Caller } from './session/request-auth.js';
import { DashboardSessions } from './session/sessions.js';
import { tokenRoutes } from './routes/tokens.js';
import { webhookRoutes } from './routes/webhooks.js';
import { webhookToolRoutes } from './routes/webhook-tools.js';
import { SHARED_SCHEMAS } from './schemas.js';
import { clientIp } from '../rules/ip-match.js';
import { wholeMs } from '../rules/whole-ms.js';
import { TLS_HANDSHAKE_TIMEOUT_MS } from '../tls/handshake.js';

export interface ApiAppOptions {
  readonly logger: FastifyBaseLogger;
  /** TLS options for the management listener; omitted for plain HTTP (and for `inject` tests). */
  readonly https?:
    | {
        readonly key: string;
        readonly cert: string;
        /** TLS_HANDSHAKE_TIMEOUT_MS unless a test shortens it. */
        readonly handshakeTimeoutMs?: number | undefined;
      }
    | undefined;
  readonly version: string;
  /** HEAD_TIMEOUT_MS unless a test shortens it. */
  readonly headTimeoutMs?: number | undefined;
  /** Served at GET /metrics (no API key, like /healthz); no route when omitted. */
  readonly metricsRegistry?: Registry | undefined;
  /** The listener's connection cap (`connections.api`); no cap when omitted. */
  readonly connections?: ConnectionLimits | undefined;
}

export const BODY_LIMIT = 1024 * 1024;

/**
 * The management listener: REST API under /v1, health, OpenAPI. Fastify with JSON-Schema routes;
 * the proxy hot path does not go through here.
 */
export async function buildApiApp(deps: ApiDeps, options: ApiAppOptions): Promise<ApiServer> {
  // The proxy listener's slow-client limits (Fastify's default has no limit on a whole request).
  const headTimeoutMs = options.headTimeoutMs ?? HEAD_TIMEOUT_MS;
  const timeouts = {
    headersTimeout: headTimeoutMs,
    connectionsCheckingInterval: timeoutCheckIntervalMs(headTimeoutMs),
  };
  const serverOptions = {
    requestTimeout: REQUEST_TIMEOUT_MS,
    http: timeouts,
    loggerInstance: options.logger,
    // Request ids are ours, never taken from the client, so they can be trusted in logs.
    genReqId: () => newRequestId(Date.now()),
    requestIdHeader: false as const,
    // Fastify's own request lines are off: ours (onResponse below) print no URL query or headers.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    // Bad percent-encoding and over-long path parameters, and requests Node's HTTP parser refuses,
    // answer in the one error shape with a request id, like every other answer of this listener.
    frameworkErrors: frameworkError,
    clientErrorHandler: clientErrorHandler(options.logger),
    ajv: {
      customOptions: {
        // Unknown fields are errors (not silently dropped) and types are not coerced: "5" is not 5.
        removeAdditional: false,
        coerceTypes: false,
        useDefaults: false,
        // All errors, so the handler can report the most useful one (an unknown field before the
        // missing field it was probably meant to be). Bodies are capped at 1 MB.
        allErrors: true,
      },
    },
  };
  const base = options.https
    ? Fastify<HttpsServer>({
        ...serverOptions,
        https: {
          key: options.https.key,
          cert: options.https.cert,
          minVersion: 'TLSv1.3',
          handshakeTimeout: options.https.handshakeTimeoutMs ?? TLS_HANDSHAKE_TIMEOUT_MS,
          ...timeouts,
        },
      })
    : Fastify(serverOptions);
  // The type parameters differ between the HTTP and HTTPS instances; routes see neither.
  const app = base.withTypeProvider<TypeBoxTypeProvider>() as unknown as ApiServer;
  registerJsonBodies(app);

  app.decorateRequest('clientIp', '');
  app.addHook('onRequest', (request, _reply, done) => {
    const forwarded = request.headers['x-forwarded-for'];
    request.clientIp = clientIp(
      request.socket.remoteAddress ?? '',
      Array.isArray(forwarded) ? forwarded.join(',') : forwarded,
      deps.trustProxy ?? null,
    );
    done();
  });

  const routeMethods = new RouteMethods();
  app.addHook('onRoute', (route) => {
    routeMethods.add(route.method, route.url);
  });

  app.addHook('onSend', async (request, reply) => {
    void reply.header('x-request-id', request.id);
    // Every answer declares its type truthfully (JSON, the dashboard's assets): no browser may
    // read one as another (an error echoing a caller's value as HTML, say).
    void reply.header('x-content-type-options', 'nosniff');
  });
  app.addHook('onResponse', async (request, reply) => {
    // Method, route and status only: never headers, bodies or query strings.
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: wholeMs(reply.elapsedTime),
      },
      'request',
    );
  });

  app.setErrorHandler((err, request, reply) => {
    if (isClientAbort(err, request)) {
      // Nobody is left to answer; one line, no stack: this is the client's doing, not a fault.
      request.log.info(
        { method: request.method, route: request.routeOptions.url ?? 'unmatched' },
        'client aborted the request',
      );
      return reply;
    }
    const error = toTokenProxyError(err);
    if (error.status >= 500) {
      request.log.error({ err: scrubbedError(err), code: error.code }, 'request failed');
    }
    return sendError(request, reply, error);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = routeMethods.allowed(path);
    if (allowed.length > 0) {
      return sendError(
        request,
        reply,
        new TokenProxyError(
          'method_not_allowed',
          `${path} does not answer to ${request.method}. Allowed: ${allowed.join(', ')}.`,
          { headers: { allow: allowed.join(', ') } },
        ),
      );
    }
    return sendError(
      request,
      reply,
      new TokenProxyError('route_not_found', `No route ${request.method} ${path}.`),
    );
  });

  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  await app.register(swagger, {
    // Shared schemas keep their names: #/components/schemas/Token, not def-3.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'tokenproxy management API',
        version: options.version,
        description: 'Create and revoke origin-bound sanitized tokens for provider API keys.',
      },
      servers: [{ url: '/v1' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'Account API key svc_sk_…' },
        },
      },
      security: [{ apiKey: [] }],
    },
  });

  healthRoutes(app, deps);
  dashboardRoutes(app);
  const sessions = new DashboardSessions(deps.store, deps.counters);
  if (options.metricsRegistry !== undefined) metricsRoutes(app, options.metricsRegistry);

  await app.register(
    (v1, _opts, done) => {
      const api = v1 as unknown as ApiServer;
      api.decorateRequest('account', null as unknown as never);
      api.decorateRequest('actor', null as unknown as never);
      api.addHook('onRoute', (route) => {
        const schema = route.schema as Record<string, unknown> | undefined;
        if (schema === undefined || schema.hide === true) return;
        const method = typeof route.method === 'string' ? route.method : '';
        if (method === 'HEAD') return;
        schema.response = {
          ...errorResponses({
            method,
            url: route.url,
            hasBody: schema.body !== undefined,
            hasParams: schema.params !== undefined,
          }),
          ...(schema.response as object | undefined),
        };
        if (IDEMPOTENT_METHODS.has(method)) schema.headers ??= IdempotencyHeaders;
      });
      api.addHook('preValidation', (request, _reply, done) => {
        coerceLimit(request.query);
        const refused =
          repeatedQueryParameter(request.query) ??
          (request.routeOptions.schema?.body === undefined
            ? unexpectedBody(request.method, request.routeOptions.url ?? request.url, request.body)
            : undefined) ??
          (request.routeOptions.schema?.querystring === undefined
            ? unexpectedQuery(request.method, request.routeOptions.url ?? request.url, request.query)
            : undefined);
        done(refused);
      });
      api.addHook('onRequest', async (request) => {
        const route = request.routeOptions.url;
        if (route === '/v1/openapi.json' || route === SESSION_ROUTE) return;
        const caller = await authenticateRequest(request, {
          sessions,
          publicApiUrl: deps.publicApiUrl,
          now: deps.now,
          bearer: (header) => authenticate(deps, header),
        });
        request.account = caller.account;
        request.actor = caller.actor;
        requireScope(request, caller);
      });
      registerIdempotency(api, deps);
      api.get('/openapi.json', { schema: { hide: true } }, () => Promise.resolve(app.swagger()));
      sessionRoutes(api, { sessions, publicApiUrl: deps.publicApiUrl, now: deps.now }, deps);
      tokenChangeRoutes(api, deps);
      tokenRoutes(api, deps);
      usageRoutes(api, deps);
      deliveryRoutes(api, deps);
      keyRoutes(api, deps);
      accountRoutes(api, deps);
      providerRoutes(api, deps);
      logRoutes(api, deps);
      anomalyRoutes(api, deps);
      webhookRoutes(api, deps);
      webhookToolRoutes(api, deps);
      eventRoutes(api, deps);
      apiKeyRoutes(api, deps);
      auditRoutes(api, deps);
      done();
    },
    { prefix: '/v1' },
  );

  // A flood of management connections must not take the descriptors the proxy and the store need;
  // and one of proxy connections leaves these their own share (src/config/connection-limits.ts).
  if (options.connections !== undefined) {
    const alarm = new DescriptorAlarm(options.logger, options.connections, 'api');
    capConnections(app.server, options.connections.api, alarm, options.logger);
  }
  return app;
}

async function authenticate(deps: ApiDeps, header: string | undefined): Promise<Caller> {
  if (header === undefined || header === '') {
    throw new TokenProxyError(
      'missing_api_key',
      'Missing API key. Send it as "Authorization: Bearer svc_sk_…".',
    );
  }
  const match = /^Bearer +(\S+)\s*$/i.exec(header);
  const key = match?.[1];
  if (key === undefined || !isApiKey(key)) {
    throw new TokenProxyError(
      'invalid_api_key',
      'The API key is malformed. Expected "Authorization: Bearer svc_sk_…".',
    );
  }
  const found = await deps.store.apiKeys.findLive(secretDigest(key));
  if (!found) throw new TokenProxyError('invalid_api_key', 'The API key is not valid.');
  return {
    account: found.account,
    actor: { type: 'api_key', id: found.key.id, name: found.key.name },
    scope: found.key.scope,
  };
}

/** What of an unexpected error may reach the log: type, message and stack, no attached request data. */
function scrubbedError(err: unknown): { type: string; message: string; stack?: string | undefined } {
  if (err instanceof Error) return { type: err.name, message: err.message, stack: err.stack };
  return { type: typeof err, message: 'non-error thrown' };
}
