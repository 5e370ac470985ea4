import { newId } from '../ids/formats.js';
import { StoreUnavailableError } from '../store/errors.js';
import type { OutboxEvent } from '../store/event-records.js';
import type { Store } from '../store/store.js';
import { EVENT_TYPES, type EventPublisher, type NewEvent } from './publisher.js';

export interface OutboxPublisherOptions {
  readonly store: Pick<Store, 'events'>;
  readonly now: () => Date;
  /** Event types also sent by e-mail (empty when SMTP is not configured). */
  readonly emailTypes: readonly string[];
  /** Called after each commit, to wake the delivery worker. */
  readonly onCommitted: () => void;
  /** First wait before storing held events again; doubles up to RETRY_MAX_MS (tests shorten it). */
  readonly retryFirstMs?: number;
}

export interface OutboxPublisher extends EventPublisher {
  /** Events waiting for the store to take them (tests, and the log line at shutdown). */
  readonly held: number;
  /**
   * Stops waiting: held events get one more try, then those the store still refuses are given up
   * (their `publish` rejects, and the caller logs the loss). Resolves to how many were given up.
   */
  close(): Promise<number>;
}

/**
 * Events a store that cannot take them (unreachable, disk full, read-only) waits for: those raised on
 * the proxy path (breach, quota, anomaly, budget) have no one to retry them, and a quota's 80 % event
 * or a breach alert is raised once. Bounded: a store that stays away for long loses the newest.
 */
export const MAX_HELD_EVENTS = 1_000;
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;

interface Held {
  readonly row: OutboxEvent;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/**
 * `publish` only inserts (event plus delivery rows, one transaction) and wakes the worker: a slow
 * or dead receiver can never slow the caller. While the store refuses, events wait in memory, in
 * order, and are stored once it takes writes again: their `publish` resolves then. An event whose
 * commit was cut off by a lost connection may have been stored and be stored again (at least once).
 */
export function createOutboxPublisher(options: OutboxPublisherOptions): OutboxPublisher {
  const held: Held[] = [];
  const firstDelay = options.retryFirstMs ?? RETRY_FIRST_MS;
  let delay = firstDelay;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let retrying: Promise<void> | undefined;

  async function store(row: OutboxEvent): Promise<void> {
    await options.store.events.append([row], { emailTypes: options.emailTypes });
    options.onCommitted();
  }

  /** Queues an event behind the ones already waiting, or refuses it when stopped or full. */
  function hold(row: OutboxEvent): Promise<void> {
    if (closed) return Promise.reject(stopped());
    if (held.length >= MAX_HELD_EVENTS) return Promise.reject(heldFull());
    return new Promise<void>((resolve, reject) => {
      held.push({ row, resolve, reject });
      schedule();
    });
  }

  function schedule(): void {
    if (timer !== undefined || retrying !== undefined || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      retrying = storeHeld().finally(() => {
        retrying = undefined;
        if (held.length > 0) schedule();
      });
    }, delay);
    timer.unref();
  }

  /** In order, until the store refuses again; an event it rejects for another reason is given up. */
  async function storeHeld(): Promise<void> {
    while (held.length > 0) {
      const next = held[0] as Held;
      try {
        await store(next.row);
      } catch (err) {
        if (err instanceof StoreUnavailableError) {
          delay = Math.min(delay * 2, RETRY_MAX_MS);
          return;
        }
        held.shift();
        next.reject(err);
        continue;
      }
      held.shift();
      delay = firstDelay;
      next.resolve();
    }
  }

  return {
    get held() {
      return held.length;
    },
    async publish(event: NewEvent): Promise<void> {
      if (!(EVENT_TYPES as readonly string[]).includes(event.type))
        throw new Error(`unknown event type ${event.type}`);
      const row: OutboxEvent = {
        id: newId('event'),
        accountId: event.accountId,
        type: event.type,
        createdAt: options.now().toISOString(),
        data: event.data,
      };
      // Behind the ones already waiting: events keep their order, and a store that refuses is not
      // asked once per new event.
      if (held.length > 0) return hold(row);
      try {
        await store(row);
      } catch (err) {
        if (err instanceof StoreUnavailableError) return hold(row);
        throw err;
      }
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      await retrying;
      await storeHeld();
      const lost = held.splice(0);
      for (const h of lost) h.reject(stopped());
      return lost.length;
    },
  };
}

function stopped(): StoreUnavailableError {
  return new StoreUnavailableError(
    'the process stopped while the store refused writes: this event is not recorded',
  );
}

function heldFull(): StoreUnavailableError {
  return new StoreUnavailableError(
    `the store refuses writes and ${MAX_HELD_EVENTS} events already wait for it: this one is not recorded`,
  );
}
