import type { Registry } from 'prom-client';
import type { ApiServer } from '../context.js';

/**
 * GET /metrics in the Prometheus text format. Like /healthz it needs no API key, so scrapers need
 * no account secret; the management listener should therefore not face the public internet. The
 * series carry no tokens, keys, origins or IPs.
 */
export function metricsRoutes(app: ApiServer, registry: Registry): void {
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
}
