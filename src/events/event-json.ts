import type { Static } from 'typebox';
import type { EventObject } from '../api/schemas.js';
import type { EventRecord } from '../store/records.js';

/**
 * An event as the world sees it, in a fixed field order: what `GET /v1/events` lists and what a
 * webhook delivery's body holds (its signature covers these bytes), from one function.
 */
export function eventJson(event: EventRecord): Static<typeof EventObject> {
  return { id: event.id, type: event.type, created_at: event.createdAt, data: { ...event.data } };
}
