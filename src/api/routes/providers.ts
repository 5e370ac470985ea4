import type { ApiDeps, ApiServer } from '../context.js';
import { ProviderObject, listOf } from '../schemas.js';
import { providerView } from '../views.js';

export function providerRoutes(app: ApiServer, deps: ApiDeps): void {
  app.get(
    '/providers',
    {
      schema: {
        tags: ['providers'],
        operationId: 'listProviders',
        summary: 'Providers tokens can target',
        response: { 200: listOf(ProviderObject) },
      },
    },
    () => ({
      object: 'list' as const,
      data: deps.providers.list().map((p) => providerView(p, deps.publicProxyUrl)),
      has_more: false,
      next_cursor: null,
    }),
  );
}
