import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServerProcess } from '../support/cli.js';
import { until } from '../support/poll.js';
import { startRedis, type TestRedis } from './support.js';

const CAP = 5;
const WORKERS = 2;
const FLOOD = 40;

/** Opens `count` TCP connections and counts those the server closes. */
function flood(port: number, count: number): { sockets: Socket[]; closed: () => number } {
  let closed = 0;
  const sockets = Array.from({ length: count }, () => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('error', () => undefined);
    socket.once('close', () => closed++);
    return socket;
  });
  return { sockets, closed: () => closed };
}

describe(`serve --workers ${WORKERS} with proxy_max_connections ${CAP}`, () => {
  let redis: TestRedis;
  let dataDir = '';
  let server: ServerProcess;

  beforeAll(async () => {
    redis = await startRedis();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-workers-cap-'));
    server = await startServe([
      '--data-dir',
      dataDir,
      '--workers',
      String(WORKERS),
      '--redis',
      redis.url,
      '--proxy-max-connections',
      String(CAP),
    ]);
  });

  afterAll(async () => {
    await server?.stop();
    await redis?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('a connection past every worker’s cap is closed at once, not handed from worker to worker', async () => {
    // node:cluster's primary accepts and hands each connection to a worker. A worker at its cap
    // used to hand it back, and the primary offered it to the next one, round and round while all
    // were full: the connection hung, neither served nor closed, and the primary spun.
    const port = Number(new URL(server.proxyUrl).port);
    const { sockets, closed } = flood(port, FLOOD);
    try {
      await until(
        'the connections past the workers’ caps to be closed',
        () => closed() >= FLOOD - CAP * WORKERS,
        {
          timeoutMs: 5000,
        },
      );
      expect(server.child.exitCode).toBeNull();
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    // Each worker says so once.
    const lines = server
      .stdout()
      .split('\n')
      .filter((l) => l.includes('proxy connections at proxy_max_connections'));
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.length).toBeLessThanOrEqual(WORKERS);
    // With the flood gone, a new connection is kept again.
    const next = flood(port, 1);
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(next.closed()).toBe(0);
    } finally {
      next.sockets[0]?.destroy();
    }
  });
});
