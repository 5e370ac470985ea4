import { auditView } from '../../audit/actions.js';
import { AuditEntryObject, AuditQuery } from '../access-schemas.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { listBody, pageQuery } from '../pagination.js';
import { listOf } from '../schemas.js';

export function auditRoutes(app: ApiServer, deps: ApiDeps): void {
  app.get(
    '/audit',
    {
      schema: {
        tags: ['audit'],
        operationId: 'listAudit',
        summary: 'The audit log: every change to the account, newest first',
        querystring: AuditQuery,
        response: { 200: listOf(AuditEntryObject) },
      },
    },
    async (request) => {
      const { query } = request;
      const page = await deps.store.audit.list(
        request.account.id,
        { action: query.action, objectId: query.object_id },
        pageQuery(query),
      );
      return listBody(page, auditView, (entry) => ({ createdAt: entry.createdAt, id: entry.id }));
    },
  );
}
