import { Type } from 'typebox';
import { LISTED_EVENT_TYPES } from '../../events/publisher.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { EventObject, ListQuery, listOf } from '../schemas.js';
import { eventJson } from '../../events/event-json.js';

export function eventRoutes(app: ApiServer, deps: ApiDeps): void {
  app.get(
    '/events',
    {
      schema: {
        tags: ['events'],
        operationId: 'listEvents',
        summary: 'List events, newest first (what webhooks receive)',
        querystring: Type.Object(
          { ...ListQuery, type: Type.Optional(Type.Union(LISTED_EVENT_TYPES.map((t) => Type.Literal(t)))) },
          { additionalProperties: false },
        ),
        response: { 200: listOf(EventObject) },
      },
    },
    async (request) => {
      const { query } = request;
      const page = await deps.store.events.list(request.account.id, { type: query.type }, pageQuery(query));
      return listBody(page, eventJson);
    },
  );
}
