import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createClient } from '@redis/client';

/**
 * A redis-server of the test file's own, on a free loopback port, without persistence, so a test can
 * stop and restart it (never the machine's 6379 server).
 */
export interface TestRedis {
  readonly port: number;
  readonly url: string;
  /** SIGKILL: the connections drop at once, like a crashed server. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence). */
  start(): Promise<void>;
  /** Runs one command on a connection of its own. */
  command(args: string[]): Promise<unknown>;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;

  const command = async (args: string[]): Promise<unknown> => {
    const client = createClient({ url, socket: { reconnectStrategy: false, connectTimeout: 2_000 } });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return await client.sendCommand(args);
    } finally {
      client.destroy();
    }
  };

  const start = async (): Promise<void> => {
    const proc = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'yes',
      ],
      { stdio: 'ignore' },
    );
    child = proc;
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        if ((await command(['PING'])) === 'PONG') return;
      } catch {
        // not listening yet
      }
      if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer in 30 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const kill = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
  };

  await start();
  return { port, url, kill, start, command, stop: kill };
}

/** Polls `check` until it returns true (bounded, so a failing test ends). */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
