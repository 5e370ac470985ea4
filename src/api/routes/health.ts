import { Type } from 'typebox';
import type { ApiDeps, ApiServer } from '../context.js';

const Health = Type.Object({ status: Type.String(), degraded: Type.Optional(Type.Array(Type.String())) });

/**
 * Liveness says the process answers; readiness says it can serve: the store answers (and, on SQLite,
 * is still the file at its path) with a schema this version knows, and the KEK (an HSM round trip
 * with `kek: pkcs11`) does. The status names what is missing, or what is degraded without stopping
 * service (`redis`).
 */
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
      } catch {
        return reply.code(503).send({ status: 'store_unavailable' });
      }
      // Not ready, unlike a refused write: what this process stores is lost when it stops, and it
      // serves a file that is no longer in the data dir; only a restart (or the file back) ends it.
      const loss = deps.store.fileLoss?.();
      if (loss !== undefined) return reply.code(503).send({ status: `store_file_${loss.change}` });
      // A newer tokenproxy upgraded the schema under this process: take it out (docs/operations.md).
      const newer = await (deps.newerSchema ?? (() => deps.store.newerMigration()))().catch(() => undefined);
      if (newer !== undefined) return reply.code(503).send({ status: 'store_too_new' });
      if (!(await deps.vault.healthy())) return reply.code(503).send({ status: 'kek_unavailable' });
      // Still ready (DESIGN §9): with Redis away, limits are counted per process and nothing fails.
      // A store that refuses writes (disk full, read-only) still authorizes and forwards every proxy
      // request; changes fail and log records wait in memory, so it is named, not taken out of service.
      const refusal = deps.store.writeRefusal?.();
      const degraded = [
        ...(refusal === undefined ? [] : [refusal === 'full' ? 'store_full' : 'store_read_only']),
        ...(deps.degraded?.() ?? []),
      ];
      return degraded.length === 0 ? { status: 'ready' } : { status: 'degraded', degraded: [...degraded] };
    },
  );
}
