import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANS } from '../../src/accounts/plans.js';
import { buildApiApp } from '../../src/api/app.js';
import type { ApiServer } from '../../src/api/context.js';
import { newApiKey } from '../../src/ids/formats.js';
import { createLogger } from '../../src/observability/logger.js';
import { ProviderRegistry } from '../../src/providers/providers.js';
import { openStoreWithoutMigrating } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { createLocalVault } from '../../src/vault/local-kek.js';

describe('management API with its database down', () => {
  let app: ApiServer;
  let store: Store;
  let dataDir: string;
  const logs: string[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-down-'));
    // Nothing listens on port 1: every query fails to connect.
    store = await openStoreWithoutMigrating({
      database: 'postgres://postgres:pw-not-to-leak@127.0.0.1:1/none',
      dataDir,
      connectionTimeoutMs: 500,
    });
    app = await buildApiApp(
      {
        store,
        vault: createLocalVault(randomBytes(32)),
        providers: new ProviderRegistry([]),
        publicProxyUrl: 'https://localhost:8444',
        now: () => new Date(),
        plans: PLANS,
      },
      { logger: createLogger('debug', { write: (line: string) => void logs.push(line) }), version: 'test' },
    );
  });

  afterAll(async () => {
    await app.close();
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it.each([
    ['GET', '/v1/tokens', undefined],
    ['GET', '/v1/account', undefined],
    ['POST', '/v1/keys', { name: 'k', provider: 'openai', real_key: 'sk-should-not-be-stored-1234' }],
  ])('%s %s answers 503 store_unavailable with a plain message', async (method, url, body) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: {
        authorization: `Bearer ${newApiKey()}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
    expect(res.statusCode).toBe(503);
    const error = res.json<{ error: Record<string, string> }>().error;
    expect(error).toMatchObject({ type: 'internal', code: 'store_unavailable' });
    expect(error.message).toBe('The database is unavailable right now. Try again shortly.');
    expect(res.body).not.toMatch(/at \w+ \(|\.ts:|\.js:|ECONNREFUSED|pw-not-to-leak/);
  });

  it('/readyz says so and /healthz still answers', async () => {
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('the log names the failure without the password', () => {
    const text = logs.join('\n');
    expect(text).toContain('store_unavailable');
    expect(text).not.toContain('pw-not-to-leak');
    expect(text).not.toContain('sk-should-not-be-stored');
  });
});
