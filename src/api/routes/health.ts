import { Type } from 'typebox';
import type { ApiDeps, ApiServer } from '../context.js';

const Health = Type.Object({ status: Type.String() });

/** Liveness says the process answers; readiness says it can serve (the store answers). */
export function healthRoutes(app: ApiServer, deps: ApiDeps): void {
  app.get('/healthz', { schema: { hide: true, response: { 200: Health } } }, () =>
    Promise.resolve({ status: 'ok' }),
  );
  app.get(
    '/readyz',
    { schema: { hide: true, response: { 200: Health, 503: Health } } },
    async (_request, reply) => {
      try {
        await deps.store.ping();
        return { status: 'ready' };
      } catch {
        return reply.code(503).send({ status: 'store_unavailable' });
      }
    },
  );
}
