import { Agent, request } from 'undici';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';

// Shared set-up of the `mock provider` suites.

/** The mock provider of the running suite (4 chunks, 30 ms apart), started by `useMockProvider`. */
export let mock: MockProvider;
/** An undici dispatcher that trusts the mock provider's CA. */
export let dispatcher: Agent;

/**
 * Starts a mock provider before the suite's first test, forgets what it received before each test,
 * and stops it after the last.
 */
export function useMockProvider(): void {
  beforeAll(async () => {
    mock = await startMockProvider({ chunks: 4, gapMs: 30 });
    dispatcher = new Agent({ connect: { ca: mock.caCertPem } });
  });

  afterAll(async () => {
    await mock.close();
    await dispatcher.close();
  });

  beforeEach(() => mock.reset());
}

export function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return request(`${mock.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    dispatcher,
  });
}
