import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { metricValue, startRedis, startTestCluster, type TestCluster, type TestRedis } from './support.js';

const postgres = databases.find((d) => d.name === 'postgres');
const ORIGIN = { origin: 'https://app.example.com' };
const SKEW_MS = 120_000;
const SKEWED_CLOCK = path.join(path.dirname(fileURLToPath(import.meta.url)), '../support/skewed-clock.js');

/**
 * Two `serve` processes on one PostgreSQL database and Redis, the second on a machine whose wall
 * clock runs two minutes ahead (te../support/skewed-clock.js). Both use the database's clock
 * (src/cluster/shared-clock.ts), so they agree on windows, expiries and timestamps; before, the one
 * ahead saw the other's rate-limit window as over and opened a new one, refused tokens that had
 * minutes left, and stamped what it wrote two minutes in the future.
 */
describe.skipIf(!postgres?.available)('members whose clocks disagree', () => {
  let db: OpenedDatabase;
  let redis: TestRedis;
  let mock: MockProvider;
  let cluster: TestCluster;

  const token = async (body: Record<string, unknown>, via = 0) => {
    const created = await cluster.api(via, 'POST', '/tokens', {
      name: 'skew',
      provider: 'openai',
      allowed_hosts: ['app.example.com'],
      real_key: 'sk-skew-0000000000000000000000',
      ...body,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };

  beforeAll(async () => {
    [db, redis, mock] = await Promise.all([
      (postgres as NonNullable<typeof postgres>).create(),
      startRedis(),
      startMockProvider(),
    ]);
    cluster = await startTestCluster({
      members: 2,
      database: db.database as string,
      redisUrl: redis.url,
      providerCaPem: mock.caCertPem,
      config: { providers: { openai: { base_url: mock.url, auth: 'bearer' } } },
      memberEnv: (i): Record<string, string> =>
        i === 1 ? { NODE_OPTIONS: `--import ${SKEWED_CLOCK}`, SKEWED_CLOCK_MS: String(SKEW_MS) } : {},
    });
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    await Promise.all([mock?.close(), redis?.stop(), db?.cleanup()]);
  });

  it('the member ahead says so at start, and its metric shows by how much', async () => {
    const skewed = cluster.servers[1];
    expect(skewed?.stdout()).toContain("this machine's clock is 120.0 s ahead of the database's");
    expect(cluster.servers[0]?.stdout()).not.toContain("this machine's clock is");
    const offset = await metricValue(skewed?.apiUrl ?? '', 'tokenproxy_clock_offset_seconds');
    expect(Math.abs((offset ?? 0) - SKEW_MS / 1000)).toBeLessThan(1);
    const own = await metricValue(cluster.servers[0]?.apiUrl ?? '', 'tokenproxy_clock_offset_seconds');
    expect(Math.abs(own ?? Number.NaN)).toBeLessThan(1);
  });

  it('a rate-limit window used up on one member is used up on the member ahead too', async () => {
    const t = await token({ rate_limit: { requests: 5, window: '1m' } });
    const key = String(t.sanitized_key);
    for (let i = 0; i < 5; i++) expect((await cluster.proxy(0, key, ORIGIN)).status).toBe(200);
    const ahead = await Promise.all([1, 2, 3].map(() => cluster.proxy(1, key, ORIGIN)));
    expect(ahead.map((a) => a.code)).toEqual(['rate_limited', 'rate_limited', 'rate_limited']);
    // The window has about a minute left on the shared clock, not minus two minutes.
    const wait = Number(ahead[0]?.headers['retry-after']);
    expect(wait).toBeGreaterThan(30);
    expect(wait).toBeLessThanOrEqual(61);
  });

  it('a token with a minute left forwards on the member ahead', async () => {
    const t = await token({ expires_at: new Date(Date.now() + 60_000).toISOString() });
    const answer = await cluster.proxy(1, String(t.sanitized_key), ORIGIN);
    expect(answer.code).toBeUndefined();
    expect(answer.status).toBe(200);
  });

  it("what the member ahead writes carries the database's time", async () => {
    const before = Date.now();
    const t = await token({}, 1);
    const created = Date.parse(String(t.created_at));
    expect(created).toBeGreaterThanOrEqual(before - 1_000);
    expect(created).toBeLessThanOrEqual(Date.now() + 1_000);
  });
});
