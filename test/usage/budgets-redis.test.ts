import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.js';
import { startServe, type ServerProcess } from '../support/cli.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { startRedis, type TestRedis } from '../cluster/support.js';

/**
 * Budgets across a cluster: two `tokenproxy serve` processes on one PostgreSQL database share their
 * counters through Redis, and 50 concurrent requests of one budgeted token, spread over both, still
 * overshoot the budget by less than one request.
 */
const postgres = databases.find((d) => d.name === 'postgres');
const BODY = JSON.stringify({ model: 'gpt-4o', max_tokens: 60, messages: [{ role: 'user', content: 'hi' }] });
const WORST = Buffer.byteLength(BODY) + 60;

describe.skipIf(postgres?.available !== true)('a budget across two processes with Redis', () => {
  let mock: MockProvider;
  let db: OpenedDatabase;
  let redis: TestRedis;
  let servers: ServerProcess[] = [];
  let dispatcher: Agent;
  let apiKey: string;
  const dirs: string[] = [];

  beforeAll(async () => {
    mock = await startMockProvider();
    db = await (postgres as NonNullable<typeof postgres>).create();
    ({ apiKey } = await createAccount(db.store, 'cluster', 'unlimited', new Date()));
    // A Redis of its own: the machine's server is never touched.
    redis = await startRedis();
    const work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-cluster-'));
    dirs.push(work);
    await writeFile(path.join(work, 'ca.pem'), mock.caCertPem);
    await writeFile(
      path.join(work, 'config.json'),
      JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } } }),
    );
    const masterKey = randomBytes(32).toString('base64');
    for (let i = 0; i < 2; i++) {
      const dataDir = await mkdtemp(path.join(os.tmpdir(), `tokenproxy-cluster-${i}-`));
      dirs.push(dataDir);
      servers.push(
        await startServe(
          [
            '--data-dir',
            dataDir,
            '--database',
            db.database as string,
            '--config',
            path.join(work, 'config.json'),
            '--provider-ca',
            path.join(work, 'ca.pem'),
            '--redis',
            redis.url,
            // Plain HTTP on loopback: this test is about shared budgets, not TLS.
            '--insecure-http',
          ],
          { TOKENPROXY_MASTER_KEY: masterKey },
        ),
      );
    }
    dispatcher = new Agent({ connections: 100 });
  }, 180_000);

  afterAll(async () => {
    for (const s of servers) await s.stop();
    servers = [];
    await redis?.stop();
    await dispatcher?.close();
    await mock?.close();
    await db?.cleanup();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('50 concurrent requests over both processes overshoot a token budget by less than one request', async () => {
    const budget = 10 * WORST;
    const [first, second] = servers as [ServerProcess, ServerProcess];
    const created = await request(`${first.apiUrl}/v1/tokens`, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'cluster',
        provider: 'openai',
        real_key: 'sk-cluster-budget-0000000000',
        allowed_hosts: ['app.example.com'],
        budget: { tokens: budget, period: 'day' },
      }),
    });
    expect(created.statusCode).toBe(201);
    const { sanitized_key: token, token_id: tokenId } = (await created.body.json()) as {
      sanitized_key: string;
      token_id: string;
    };
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const res = await request(`${(i % 2 === 0 ? first : second).proxyUrl}/openai/v1/chat/completions`, {
          method: 'POST',
          dispatcher,
          headers: {
            authorization: `Bearer ${token}`,
            origin: 'https://app.example.com',
            'content-type': 'application/json',
          },
          body: BODY,
        });
        const json = (await res.body.json()) as {
          usage?: { prompt_tokens: number; completion_tokens: number };
        };
        return { status: res.statusCode, json };
      }),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThan(0);
    expect(results.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    const costs = ok.map((r) => (r.json.usage?.prompt_tokens ?? 0) + (r.json.usage?.completion_tokens ?? 0));
    const spent = costs.reduce((a, b) => a + b, 0);
    expect(spent).toBeLessThanOrEqual(budget + Math.max(...costs));
    expect(tokenId).toMatch(/\w/);
  });
});
