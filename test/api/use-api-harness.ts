import { afterAll, beforeAll } from 'vitest';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import type { DatabaseFixture } from '../support/databases.js';

/**
 * Starts an API harness on `fixture` before the tests of the calling `describe` and closes it after
 * them. The object returned is filled in by that `beforeAll`, so the tests can hold it from the start.
 */
export function useApiHarness(
  fixture: DatabaseFixture,
  options: Parameters<typeof startApiHarness>[1] = {},
): ApiHarness {
  const h = {} as ApiHarness;
  beforeAll(async () => {
    Object.assign(h, await startApiHarness(fixture, options));
  });
  afterAll(async () => {
    await h.close?.();
  });
  return h;
}
