import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connectionLimits } from '../../src/config/connection-limits.js';
import { DescriptorAlarm, type AlarmLogger } from '../../src/observability/descriptor-alarm.js';
import { capConnections } from '../../src/runtime/connection-cap.js';
import { until } from '../support/poll.js';

interface Line {
  readonly level: 'warn' | 'error';
  readonly fields: Record<string, unknown>;
  readonly msg: string;
}

function recorder(): { logger: AlarmLogger; lines: Line[] } {
  const lines: Line[] = [];
  const at =
    (level: Line['level']) =>
    (fields: Record<string, unknown>, msg: string): void =>
      void lines.push({ level, fields, msg });
  return { logger: { warn: at('warn'), error: at('error') } as unknown as AlarmLogger, lines };
}

const LIMITS = connectionLimits({ proxy: 2, upstream: 'auto' }, 1024);
const INTERVAL_MS = 200;
const servers: Server[] = [];
const sockets: Socket[] = [];

async function listening(
  logger: AlarmLogger,
  onRefused?: () => void,
): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.on('error', () => undefined));
  servers.push(server);
  capConnections(
    server,
    LIMITS.proxy,
    new DescriptorAlarm(logger, LIMITS, 'proxy', INTERVAL_MS),
    logger,
    onRefused,
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

function open(port: number): { socket: Socket; closed: Promise<void> } {
  const socket = connect({ host: '127.0.0.1', port });
  socket.on('error', () => undefined);
  sockets.push(socket);
  return { socket, closed: once(socket, 'close').then(() => undefined) };
}

const accept = (code: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`accept ${code}`), { code, errno: -24, syscall: 'accept' });

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

describe('capConnections', () => {
  it('closes connections past the cap at accept, and says so once, then with a count at most once per interval', async () => {
    const { lines, logger } = recorder();
    let refused = 0;
    const { server, port } = await listening(logger, () => refused++);
    const held = [open(port), open(port)];
    await until('both connections to be accepted', async () => {
      const count = await new Promise<number>((r) => server.getConnections((_e, n) => r(n)));
      return count === 2;
    });
    const past = Array.from({ length: 10 }, () => open(port));
    await Promise.all(past.map((c) => c.closed));
    expect(refused).toBe(10);
    expect(held.every((c) => !c.socket.destroyed)).toBe(true);
    expect(lines).toEqual([
      {
        level: 'warn',
        fields: { listener: 'proxy', refused: 1, proxy_max_connections: 2, descriptor_limit: 1024 },
        msg: expect.stringContaining(
          'raise the descriptor limit (LimitNOFILE) and with it proxy_max_connections',
        ) as string,
      },
    ]);
    // The rest are told when the interval is over, in one line.
    await until('the count of the others', () => lines.length === 2, { timeoutMs: 2000 });
    expect(lines[1]?.fields.refused).toBe(9);
  });

  it('an accept that finds no descriptor (EMFILE) is told, and does not end the process', async () => {
    const { lines, logger } = recorder();
    const { server, port } = await listening(logger);
    // Without a listener, this 'error' would be thrown: an uncaught exception.
    for (let i = 0; i < 5; i++) server.emit('error', accept(i === 4 ? 'ENFILE' : 'EMFILE'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'error',
      fields: { listener: 'proxy', at: 'accept', error_code: 'EMFILE', failures: 1, descriptor_limit: 1024 },
    });
    expect(lines[0]?.msg).toContain('ran out of file descriptors');
    await until('the count of the others', () => lines.length === 2, { timeoutMs: 2000 });
    expect(lines[1]?.fields).toMatchObject({ failures: 4, error_code: 'ENFILE' });
    // Still accepting.
    const { socket } = open(port);
    await once(socket, 'connect');
  });

  it('leaves a failed bind to listen(): not logged, and thrown as before when no one listens for it', async () => {
    const { lines, logger } = recorder();
    const { port } = await listening(logger);
    const second = createServer();
    servers.push(second);
    capConnections(second, 2, new DescriptorAlarm(logger, LIMITS, 'proxy'), logger);
    const failed = new Promise<NodeJS.ErrnoException>((resolve) => second.once('error', resolve));
    second.listen(port, '127.0.0.1');
    expect((await failed).code).toBe('EADDRINUSE');
    expect(lines).toEqual([]);
    const lone = createServer();
    capConnections(lone, 2, new DescriptorAlarm(logger, LIMITS, 'proxy'), logger);
    expect(() =>
      lone.emit('error', Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' })),
    ).toThrow('EADDRINUSE');
  });
});
