import { newId } from '../ids/formats.js';
import type { Store } from '../store/store.js';
import { EVENT_TYPES, type EventPublisher, type NewEvent } from './publisher.js';

export interface OutboxPublisherOptions {
  readonly store: Pick<Store, 'events'>;
  readonly now: () => Date;
  /** Event types also sent by e-mail (empty when SMTP is not configured). */
  readonly emailTypes: readonly string[];
  /** Called after each commit, to wake the delivery worker. */
  readonly onCommitted: () => void;
}

/**
 * `publish` only inserts (event plus delivery rows, one transaction) and wakes the worker: a slow
 * or dead receiver can never slow the caller.
 */
export function createOutboxPublisher(options: OutboxPublisherOptions): EventPublisher {
  return {
    async publish(event: NewEvent): Promise<void> {
      if (!(EVENT_TYPES as readonly string[]).includes(event.type))
        throw new Error(`unknown event type ${event.type}`);
      await options.store.events.append(
        [
          {
            id: newId('event'),
            accountId: event.accountId,
            type: event.type,
            createdAt: options.now().toISOString(),
            data: event.data,
          },
        ],
        { emailTypes: options.emailTypes },
      );
      options.onCommitted();
    },
  };
}
