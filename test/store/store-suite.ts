import { afterAll, beforeAll } from 'vitest';
import type { Store } from '../../src/store/store.js';
import type { DatabaseFixture, OpenedDatabase } from '../support/databases.js';

/**
 * The database of the suite that is running, set by `useDatabase` before the suite's first test.
 * The suites of a file run one after another, so every test sees the database its own suite opened.
 */
export let opened: OpenedDatabase;
/** `opened.store`. */
export let store: Store;

/**
 * Opens a fresh database of `fixture` before the suite's first test and removes it after its last.
 * Call it first thing in each `describe.skipIf(!fixture.available)` of the `databases` loop.
 */
export function useDatabase(fixture: DatabaseFixture): void {
  let own: OpenedDatabase;

  beforeAll(async () => {
    own = await fixture.create();
    opened = own;
    store = own.store;
  });

  afterAll(async () => {
    await own.cleanup();
  });
}

/** Existing records sit by (created_at, id). */
export const byCreation = (item: { createdAt: string; id: string }) => ({
  createdAt: item.createdAt,
  id: item.id,
});
