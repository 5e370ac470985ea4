import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createOutboxPublisher,
  MAX_HELD_EVENTS,
  type OutboxPublisher,
} from '../../src/events/outbox-publisher.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { until } from '../support/poll.js';
import { storeDb } from '../support/store-internals.js';
import { newAccount } from '../store/helpers.js';

/**
 * Events raised on the proxy path (breach, quota, anomaly, budget) have no caller to retry them. On a
 * real SQLite store that refuses writes they wait in memory, in order, and are stored once it takes
 * writes again.
 */
describe('the outbox publisher while the store refuses writes', () => {
  let dir: string;
  let store: Store;
  let accountId: string;
  let publisher: OutboxPublisher;
  let committed: number;
  let clock = Date.UTC(2026, 10, 29, 12, 0, 0);

  /**
   * The store refuses every write, as a read-only database does (SQLITE_READONLY, like a disk full's
   * SQLITE_FULL a `store_unavailable` refusal): deterministic, where a full disk still takes rows
   * that fit in pages it has.
   */
  async function refuseWrites(refuse: boolean): Promise<void> {
    await sql.raw(`pragma query_only = ${refuse ? 'on' : 'off'}`).execute(storeDb(store));
  }

  async function storedTypes(): Promise<string[]> {
    const page = await store.events.list(accountId, {}, { limit: 100 });
    return page.items.map((e) => String(e.data.n)).reverse(); // oldest first
  }

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-outbox-held-'));
    store = await openStore({ dataDir: dir, database: undefined });
    accountId = (await newAccount(store)).account.id;
    committed = 0;
    publisher = createOutboxPublisher({
      store,
      // A millisecond apart each: the store lists events by creation time.
      now: () => new Date((clock += 1)),
      emailTypes: [],
      onCommitted: () => void (committed += 1),
      retryFirstMs: 50,
    });
  });
  afterEach(async () => {
    await publisher.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const event = (n: number) => ({ accountId, type: 'breach.detected' as const, data: { n } });

  it('holds events while the store refuses writes and stores them, in order, once it takes them', async () => {
    await refuseWrites(true);
    const published = [1, 2, 3].map((n) => publisher.publish(event(n)));
    await until('the events to be held', () => publisher.held === 3);
    await new Promise((r) => setTimeout(r, 200)); // several retries, all refused
    expect(publisher.held).toBe(3);
    expect(await storedTypes()).toEqual([]);
    await refuseWrites(false);
    await Promise.all(published);
    expect(await storedTypes()).toEqual(['1', '2', '3']);
    expect(committed).toBe(3);
    expect(publisher.held).toBe(0);
    // Afterwards events go straight to the store again.
    await publisher.publish(event(4));
    expect(await storedTypes()).toEqual(['1', '2', '3', '4']);
  });

  it(`holds at most ${MAX_HELD_EVENTS} events: the next one is refused at once, saying so`, async () => {
    await refuseWrites(true);
    const first = publisher.publish(event(0));
    await until('the first event to be held', () => publisher.held === 1);
    const rest = Array.from({ length: MAX_HELD_EVENTS - 1 }, (_, i) => publisher.publish(event(i + 1)));
    expect(publisher.held).toBe(MAX_HELD_EVENTS);
    const refused = publisher.publish(event(MAX_HELD_EVENTS));
    await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(refused).rejects.toThrow(/1000 events already wait/);
    await refuseWrites(false);
    await Promise.all([first, ...rest]);
    expect((await store.events.list(accountId, {}, { limit: 1 })).items[0]?.data.n).toBe(MAX_HELD_EVENTS - 1);
  });

  it('at close, gives held events one more try, then gives up those the store still refuses', async () => {
    await refuseWrites(true);
    const published = publisher.publish(event(1));
    published.catch(() => undefined);
    await until('the event to be held', () => publisher.held === 1);
    expect(await publisher.close()).toBe(1);
    await expect(published).rejects.toThrow(/process stopped/);
    await expect(publisher.publish(event(2))).rejects.toBeInstanceOf(StoreUnavailableError);
    await refuseWrites(false);
    expect(await storedTypes()).toEqual([]);
  });

  it('at close, stores what the store takes again', async () => {
    await refuseWrites(true);
    const published = publisher.publish(event(1));
    await until('the event to be held', () => publisher.held === 1);
    await refuseWrites(false);
    expect(await publisher.close()).toBe(0);
    await published;
    expect(await storedTypes()).toEqual(['1']);
  });
});
