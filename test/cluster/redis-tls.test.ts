import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis } from '../../src/cluster/redis-connection.js';
import { createTestCa } from '../support/test-ca.js';
import { until } from '../support/poll.js';
import { startRedis, type TestRedis } from './support.js';

/** `rediss://` with `redis_ca`: the private CA is trusted for Redis, and only with it. */
describe('a TLS Redis', () => {
  let redis: TestRedis;
  let dir: string;
  let caFile: string;

  beforeAll(async () => {
    const ca = await createTestCa('tokenproxy redis test CA');
    const leaf = await ca.issue(['127.0.0.1']);
    redis = await startRedis({ tls: { ...leaf, caPem: ca.caCertPem } });
    dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-redis-ca-'));
    caFile = path.join(dir, 'ca.pem');
    await writeFile(caFile, ca.caCertPem);
  }, 60_000);

  afterAll(async () => {
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('connects over TLS when redis_ca names the CA that signed the server certificate', async () => {
    expect(redis.url.startsWith('rediss://')).toBe(true);
    const connection = connectRedis({ url: redis.url, ca: caFile }, pino({ level: 'silent' }));
    try {
      await until('the TLS connection to be up', () => connection.up, { timeoutMs: 30_000 });
      expect(await connection.client.sendCommand(['PING'])).toBe('PONG');
    } finally {
      await connection.close();
    }
  });

  it('does not trust the private CA without redis_ca: stays down and says why once', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const connection = connectRedis({ url: redis.url }, logger);
    try {
      await until(
        "the 'unreachable at start' warning",
        () => lines.some((l) => l.includes('unreachable at start')),
        { timeoutMs: 30_000 },
      );
      // Several reconnect attempts later, still one warning.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(connection.up).toBe(false);
      expect(lines.filter((l) => l.includes('Redis is unreachable'))).toHaveLength(1);
      expect(lines.join('\n')).toMatch(/certificate/i);
    } finally {
      await connection.close();
    }
  });
});
