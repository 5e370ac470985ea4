import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { until } from '../support/poll.js';
import {
  metricValue,
  readyz,
  REDIS_POLL,
  startRedis,
  startTestCluster,
  type TestCluster,
  type TestRedis,
} from './support.js';

const postgres = databases.find((d) => d.name === 'postgres');
const ORIGIN = { origin: 'https://app.example.com' };
// The loss while running (a slow start may also log "unreachable at start" once).
const LOST = 'Redis is unreachable: limits';

/**
 * DESIGN §9's failure behaviour, with two members: Redis killed mid-test and started again. Nothing
 * authorized fails, the metric and /readyz say degraded, one warning per member, sharing resumes.
 */
describe.skipIf(!postgres?.available)('two serve processes while Redis goes away and comes back', () => {
  let db: OpenedDatabase;
  let redis: TestRedis;
  let mock: MockProvider;
  let cluster: TestCluster;

  const token = async (body: Record<string, unknown>): Promise<{ id: string; key: string }> => {
    const created = await cluster.api(0, 'POST', '/tokens', {
      name: 'outage',
      provider: 'openai',
      allowed_hosts: ['app.example.com'],
      ...body,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { id: String(created.body.token_id), key: String(created.body.sanitized_key) };
  };
  const lost = (i: number): string[] =>
    (cluster.servers[i]?.stdout() ?? '').split('\n').filter((line) => line.includes(LOST));
  const warnings = (i: number): number => lost(i).length;

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
      config: {
        providers: { openai: { base_url: mock.url, auth: 'bearer' } },
        plans: { free: { active_tokens: null, requests_per_month: null } },
      },
    });
  }, 180_000);

  afterAll(async () => {
    try {
      await cluster?.stop();
    } finally {
      await Promise.all([mock?.close(), redis?.stop(), db?.cleanup()]);
    }
  });

  it('a token made on one member forwards on the other; Redis is up and /readyz is ready', async () => {
    const t = await token({ real_key: 'sk-outage-first-0000000000000' });
    for (const i of [1, 0]) expect((await cluster.proxy(i, t.key, ORIGIN)).status).toBe(200);
    for (const server of cluster.servers) {
      await until(
        `tokenproxy_redis_up 1 at ${server.apiUrl}`,
        async () => (await metricValue(server.apiUrl, 'tokenproxy_redis_up')) === 1,
        REDIS_POLL,
      );
      expect(await readyz(server.apiUrl)).toEqual({ status: 200, body: { status: 'ready' } });
    }
  });

  it('Redis killed: authorized traffic goes on, limits count per process, metric 0, /readyz 200 degraded, one warning', async () => {
    const plain = await token({ real_key: 'sk-outage-plain-0000000000000' });
    const limited = await token({
      real_key: 'sk-outage-limited-00000000000',
      rate_limit: { requests: 1000, window: '1m' },
    });
    await redis.kill();
    const answers = [];
    for (let round = 0; round < 10; round++) {
      for (const i of [0, 1]) {
        answers.push(await cluster.proxy(i, plain.key, ORIGIN));
        answers.push(await cluster.proxy(i, limited.key, ORIGIN));
      }
    }
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    // Counted per process meanwhile: each member has seen 10 of the limited token's requests.
    const last = answers.at(-1);
    expect(last?.headers['ratelimit-remaining']).toBe(String(1000 - 10));
    for (const [i, server] of cluster.servers.entries()) {
      await until(
        `tokenproxy_redis_up 0 at ${server.apiUrl}`,
        async () => (await metricValue(server.apiUrl, 'tokenproxy_redis_up')) === 0,
        REDIS_POLL,
      );
      expect(await readyz(server.apiUrl)).toEqual({
        status: 200,
        body: { status: 'degraded', degraded: ['redis'] },
      });
      expect(warnings(i), lost(i).join('\n')).toBe(1);
    }
  }, 60_000);

  it('while Redis is away a revoke on A still reaches B within 1 s (its cache expires)', async () => {
    const t = await token({ real_key: 'sk-outage-revoke-000000000000' });
    expect((await cluster.proxy(1, t.key, ORIGIN)).status).toBe(200);
    expect((await cluster.api(0, 'DELETE', `/tokens/${t.id}`)).status).toBe(200);
    const revokedAt = Date.now();
    let answer = await cluster.proxy(1, t.key, ORIGIN);
    while (answer.status === 200 && Date.now() - revokedAt < 1_100)
      answer = await cluster.proxy(1, t.key, ORIGIN);
    expect(answer.code).toBe('token_revoked');
  });

  it('Redis back: the metric returns to 1, /readyz to ready, and limits are shared again', async () => {
    await redis.start();
    for (const server of cluster.servers) {
      await until(
        `tokenproxy_redis_up 1 again at ${server.apiUrl}`,
        async () => (await metricValue(server.apiUrl, 'tokenproxy_redis_up')) === 1,
        { timeoutMs: 30_000 },
      );
      expect(await readyz(server.apiUrl)).toEqual({ status: 200, body: { status: 'ready' } });
    }
    const t = await token({
      real_key: 'sk-outage-after-0000000000000',
      rate_limit: { requests: 4, window: '1m' },
    });
    mock.reset();
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => cluster.proxy(i, t.key, ORIGIN)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(4);
    expect(answers.filter((a) => a.code === 'rate_limited')).toHaveLength(8);
    // Still one warning per member: the outage was logged once, not per request.
    for (const i of [0, 1]) expect(warnings(i)).toBe(1);
  }, 60_000);
});
