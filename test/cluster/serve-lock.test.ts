import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/store/open.js';
import { runCli, startServe, type ServerProcess } from '../support/cli.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { until } from '../support/poll.js';
import { readyz, REDIS_POLL, startRedis, type TestRedis } from './support.js';

const postgres = databases.find((d) => d.name === 'postgres');
const KEK = { TOKENPROXY_MASTER_KEY: Buffer.alloc(32, 9).toString('base64') };

describe('the redis settings', () => {
  const load = (flags: Record<string, string>) => () => loadConfig({ flags, env: {} });
  const table: [Record<string, string>, string | RegExp][] = [
    [
      { redis: 'http://cache:6379' },
      /Setting "redis" has an invalid value \(value hidden\).*redis:\/\/ or rediss:\/\//,
    ],
    [{ redis: 'redis://:pw@' }, /Setting "redis" has an invalid value \(value hidden\)/],
    [{ redis: 'redis://cache:6379', redis_ca: '/tmp/ca.pem' }, /"redis_ca" applies to a TLS connection only/],
  ];
  for (const [flags, message] of table) {
    it(`${JSON.stringify(flags)} is refused, naming the setting`, () => {
      expect(load(flags)).toThrow(message);
    });
  }

  it('redis and rediss URLs are accepted, from the flag or TOKENPROXY_REDIS', () => {
    expect(loadConfig({ flags: { redis: 'redis://cache:6379' }, env: {} }).redis).toBe('redis://cache:6379');
    const fromEnv = loadConfig({
      flags: { redis_ca: '/tmp/ca.pem' },
      env: { TOKENPROXY_REDIS: 'rediss://c:6380' },
    });
    expect([fromEnv.redis, fromEnv.redisCa, fromEnv.sources.redis]).toEqual([
      'rediss://c:6380',
      '/tmp/ca.pem',
      'env',
    ]);
  });

  it('an unreadable redis_ca stops the start, naming the setting', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-redisca-'));
    try {
      const result = await runCli(
        [
          'serve',
          '--data-dir',
          dir,
          '--redis',
          'rediss://127.0.0.1:1',
          '--redis-ca',
          path.join(dir, 'none.pem'),
        ],
        KEK,
      );
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('setting redis_ca: cannot read');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!postgres?.available)('who may serve one PostgreSQL database', () => {
  let db: OpenedDatabase;
  let first: ServerProcess | undefined;

  beforeAll(async () => {
    db = await (postgres as NonNullable<typeof postgres>).create();
  });
  afterAll(async () => {
    await first?.stop();
    await db?.cleanup();
  });

  it('without redis, a second serve refuses to start and names the running one', async () => {
    const dirs = await Promise.all([0, 1].map(() => mkdtemp(path.join(os.tmpdir(), 'tokenproxy-pglock-'))));
    try {
      first = await startServe(
        ['--data-dir', dirs[0] as string, '--database', db.database as string, '--insecure-http'],
        KEK,
      );
      const second = await runCli(
        [
          'serve',
          '--data-dir',
          dirs[1] as string,
          '--database',
          db.database as string,
          '--insecure-http',
          '--api-port',
          '0',
          '--proxy-port',
          '0',
        ],
        KEK,
      );
      expect(second.code).not.toBe(0);
      expect(second.stderr).toContain('is already serving this PostgreSQL database without redis');
      expect(second.stderr).toContain(`tokenproxy serve pid ${first.child.pid}`);
      expect(second.stderr).toContain('--redis');
      // Stopped, the first one's lock goes with it: the next serve starts.
      await first.stop();
      first = await startServe(
        ['--data-dir', dirs[1] as string, '--database', db.database as string, '--insecure-http'],
        KEK,
      );
    } finally {
      await first?.stop();
      first = undefined;
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('a process without redis and the members of a redis cluster exclude each other, both ways', async () => {
    const redis = await startRedis();
    const dirs = await Promise.all([0, 1].map(() => mkdtemp(path.join(os.tmpdir(), 'tokenproxy-pgmix-'))));
    const serve = (dir: string, member: boolean) => [
      'serve',
      ...['--data-dir', dir, '--database', db.database as string, '--insecure-http'],
      ...['--api-port', '0', '--proxy-port', '0'],
      ...(member ? ['--redis', redis.url] : []),
    ];
    try {
      first = await startServe(serve(dirs[0] as string, true).slice(1), KEK);
      const alone = await runCli(serve(dirs[1] as string, false), KEK);
      expect(alone.code).toBe(2);
      expect(alone.stderr).toContain('setting redis: a tokenproxy cluster (processes with redis');
      expect(alone.stderr).toContain(`pid ${first.child.pid}`);
      await first.stop();

      first = await startServe(serve(dirs[0] as string, false).slice(1), KEK);
      const member = await runCli(serve(dirs[1] as string, true), KEK);
      expect(member.code).toBe(2);
      expect(member.stderr).toContain(
        'is serving this PostgreSQL database without redis, counting limits alone',
      );
    } finally {
      await first?.stop();
      first = undefined;
      await redis.stop();
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('an unreachable PostgreSQL is named, without the password', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-pgdown-'));
    try {
      // A data dir the start makes, and must not leave behind.
      const made = path.join(dir, 'new');
      const result = await runCli(
        ['serve', '--data-dir', made, '--database', 'postgres://tp:pg-s3cret@127.0.0.1:1/nowhere'],
        KEK,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('PostgreSQL at postgres://127.0.0.1:1/nowhere is unavailable');
      expect(result.stderr).not.toContain('pg-s3cret');
      expect(existsSync(made)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('several processes on one SQLite data dir with redis', () => {
  let redis: TestRedis;
  let dir: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    [redis, dir] = await Promise.all([
      startRedis(),
      mkdtemp(path.join(os.tmpdir(), 'tokenproxy-sqlite-cluster-')),
    ]);
    await writeFile(path.join(dir, '.keep'), '');
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('start together as members of one cluster and create one default account', async () => {
    const args = ['--data-dir', dir, '--insecure-http', '--redis', redis.url];
    servers.push(...(await Promise.all([startServe(args, KEK), startServe(args, KEK)])));
    const keys = servers.map((s) => /svc_sk_\w+/.exec(s.stderr())?.[0]).filter((k) => k !== undefined);
    expect(keys).toHaveLength(1);
    const store = await openStore({ database: undefined, dataDir: dir });
    try {
      expect(await store.accounts.count()).toBe(1);
    } finally {
      await store.close();
    }
  }, 180_000);

  it('a process without redis is refused beside the members, and a member beside it', async () => {
    const alone = await runCli(
      ['serve', '--data-dir', dir, '--insecure-http', '--api-port', '0', '--proxy-port', '0'],
      KEK,
    );
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('setting redis: a tokenproxy cluster (processes with redis');
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    // The members' files and their directory go with the last member.
    expect(existsSync(path.join(dir, 'serve.members'))).toBe(false);

    const own = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-sqlite-alone-'));
    const single = await startServe(['--data-dir', own, '--insecure-http'], KEK);
    try {
      const member = await runCli(
        [
          'serve',
          '--data-dir',
          own,
          '--insecure-http',
          '--api-port',
          '0',
          '--proxy-port',
          '0',
          '--redis',
          redis.url,
        ],
        KEK,
      );
      expect(member.code).toBe(2);
      expect(member.stderr).toContain(`pid ${single.child.pid}`);
      expect(member.stderr).toContain('without redis, counting limits alone');
    } finally {
      await single.stop();
      await rm(own, { recursive: true, force: true });
    }
  }, 180_000);

  it('never prints or logs the Redis password, and starts although Redis refuses it', async () => {
    const own = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-redis-secret-'));
    let server: ServerProcess | undefined;
    try {
      // This Redis has no password: AUTH fails, so the process runs degraded and says so.
      const url = `redis://:s3cret-redis-pass@127.0.0.1:${redis.port}`;
      const started = await startServe(['--data-dir', own, '--insecure-http', '--redis', url], KEK);
      server = started;
      await until(
        "the 'Redis is unreachable at start' log line",
        () => started.stdout().includes('Redis is unreachable at start'),
        REDIS_POLL,
      );
      const everything = started.stdout() + started.stderr();
      expect(everything).toContain(`redis://:***@127.0.0.1:${redis.port}`);
      expect(everything).not.toContain('s3cret-redis-pass');
      expect((await readyz(started.apiUrl)).body).toEqual({ status: 'degraded', degraded: ['redis'] });
    } finally {
      await server?.stop();
      await rm(own, { recursive: true, force: true });
    }
  }, 120_000);
});
