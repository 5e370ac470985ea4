import type { FastifyRequest } from 'fastify';
import { auditRecords, type AuditAction } from '../audit/actions.js';
import type { ApiDeps } from './context.js';

/**
 * Records a change the request made, once the store has it: one line per route. Who is the request's
 * API key (or dashboard session), from the request's IP. Actions that are event types also commit
 * their event with the entry, and wake the delivery worker.
 */
export async function audit(
  deps: ApiDeps,
  request: FastifyRequest,
  action: AuditAction,
  objectId: string | null,
  eventData?: Readonly<Record<string, unknown>>,
): Promise<void> {
  const { entry, event } = auditRecords({
    accountId: request.account.id,
    action,
    objectId,
    actor: request.actor,
    ip: request.ip,
    at: deps.now(),
    eventData,
  });
  await deps.store.audit.record(entry, event);
  if (event !== undefined) deps.onEventsCommitted?.();
}
