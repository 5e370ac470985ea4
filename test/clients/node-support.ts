import { afterAll, beforeAll } from 'vitest';
import { TokenProxy } from '../../clients/node/src/index.js';
import { startClientTestServer, type ClientTestServer } from './support.js';

// Shared set-up of the @tokenproxy/client (Node.js) test files.

export const SANITIZED = /^svc_hb_[1-9A-HJ-NP-Za-km-z]{43}$/;

/** The server of the running test file, started by `useClientTestServer`. */
export let t: ClientTestServer;

/** Starts a real `tokenproxy serve` before the file's first test and stops it after its last. */
export function useClientTestServer(): void {
  beforeAll(async () => {
    t = await startClientTestServer();
  });
  afterAll(async () => {
    await t.stop();
  });
}

export async function client(options: { apiKey?: string; maxRetries?: number } = {}): Promise<TokenProxy> {
  return new TokenProxy({
    apiKey: options.apiKey ?? (await t.newAccount()),
    baseUrl: t.baseUrl,
    ca: t.ca,
    maxRetries: options.maxRetries ?? 2,
  });
}

export const tokenParams = (name = 'web app') => ({
  name,
  provider: 'openai',
  realKey: 'sk-test-0123456789abcdefWXYZ',
  allowedHosts: ['app.example.com', 'localhost'],
});
