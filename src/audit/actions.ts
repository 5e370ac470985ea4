import { newId } from '../ids/formats.js';
import type { Actor, AuditEntry } from '../store/access-records.js';
import type { OutboxEvent } from '../store/store.js';
import { AUDIT_ACTIONS } from './action-names.js';

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * The actions that are also webhook event types: the ones a subscriber can act on. Token events
 * carry the token object (like `token.revoked`); the others carry the audit entry.
 */
export const AUDITED_EVENT_TYPES = [
  'token.created',
  'token.updated',
  'api_key.created',
  'api_key.deleted',
  'account.plan_changed',
  'account.key_rotated',
] as const satisfies readonly AuditAction[];

export const CLI_ACTOR: Actor = Object.freeze({ type: 'cli', id: null, name: 'cli' });
export const SESSION_ACTOR_NAME = 'dashboard session';

export interface Change {
  readonly accountId: string;
  readonly action: AuditAction;
  readonly objectId: string | null;
  readonly actor: Actor;
  readonly ip: string | null;
  readonly at: Date;
  /** The event's `data` when the action is an event type; the audit entry's view when omitted. */
  readonly eventData?: Readonly<Record<string, unknown>> | undefined;
  /** Added to the audit entry's view in the event (a plan change's old and new plan). */
  readonly details?: Readonly<Record<string, unknown>> | undefined;
}

/** The entry for a change and, for the actions subscribers can receive, its outbox event. */
export function auditRecords(change: Change): { entry: AuditEntry; event: OutboxEvent | undefined } {
  const entry: AuditEntry = {
    id: newId('audit'),
    accountId: change.accountId,
    createdAt: change.at.toISOString(),
    action: change.action,
    objectId: change.objectId,
    actor: change.actor,
    ip: change.ip,
  };
  const isEvent = (AUDITED_EVENT_TYPES as readonly string[]).includes(change.action);
  const event: OutboxEvent | undefined = isEvent
    ? {
        id: newId('event'),
        accountId: change.accountId,
        type: change.action,
        createdAt: entry.createdAt,
        data: change.eventData ?? { ...auditView(entry), ...change.details },
      }
    : undefined;
  return { entry, event };
}

/** The JSON of an entry, as GET /v1/audit and the audit-born events show it. */
export function auditView(entry: AuditEntry) {
  return {
    id: entry.id,
    action: entry.action,
    object_id: entry.objectId,
    actor: { type: entry.actor.type, id: entry.actor.id, name: entry.actor.name },
    ip: entry.ip,
    created_at: entry.createdAt,
  };
}
