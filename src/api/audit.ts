import type { FastifyRequest } from 'fastify';
import { auditRecords, type AuditAction } from '../audit/actions.js';
import type { Store } from '../store/store.js';
import type { ApiDeps } from './context.js';

/** Appends one audit entry to the change's transaction. */
export type RecordAudit = (
  action: AuditAction,
  objectId: string | null,
  eventData?: Readonly<Record<string, unknown>>,
) => Promise<void>;

/**
 * Runs a route's change and the audit entries recording it in one transaction: a change never
 * commits without its entry (nor the event the entry announces), and an entry never without its
 * change. Were the entry written after the commit, a failed write would answer 500 for a change that
 * happened and lose its webhook event. Who is the request's API key (or dashboard session), from the
 * request's IP. Wakes the delivery worker once the commit holds an announced event.
 *
 * Side effects outside the database (invalidating caches, waking workers for the change's own
 * events) belong after this resolves, when the change is committed.
 */
export async function audited<T>(
  deps: ApiDeps,
  request: FastifyRequest,
  change: (tx: Store, audit: RecordAudit) => Promise<T>,
): Promise<T> {
  let announced = false;
  const result = await deps.store.transaction((tx) =>
    change(tx, async (action, objectId, eventData) => {
      const { entry, event } = auditRecords({
        accountId: request.account.id,
        action,
        objectId,
        actor: request.actor,
        ip: request.clientIp,
        at: deps.now(),
        eventData,
      });
      await tx.audit.record(entry, event);
      if (event !== undefined) announced = true;
    }),
  );
  if (announced) deps.onEventsCommitted?.();
  return result;
}
