import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { h1Connect } from './h1-socket.js';
import { h2Close, h2Connect, h2Request } from './h2-client.js';
import { bearer, startProxyHarness, type ProxyHarness } from './harness.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

/** The listener's idle timeout, shortened: what it ends, and what it must leave alone. */
const IDLE_MS = 300;

describe('the proxy listener idle timeout', () => {
  let h: ProxyHarness;
  let token: string;

  beforeAll(async () => {
    h = await startProxyHarness(sqlite, { idleTimeoutMs: IDLE_MS });
    ({ token } = await h.createToken({}));
  });
  afterAll(async () => {
    await h?.close();
  });

  it('an HTTP/1.1 request whose provider is silent for longer than the idle timeout is answered', async () => {
    const res = await h.send(`/openai/slow?ms=${IDLE_MS * 4}`, { headers: bearer(token) });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ ok: true, waited_ms: IDLE_MS * 4 });
    // And the listener serves on.
    expect((await h.send('/openai/v1/models', { headers: bearer(token) })).status).toBe(200);
  });

  it('an HTTP/1.1 connection left quiet after its answer is closed, and the listener serves on', async () => {
    const socket = await h1Connect(h.url, h.ca);
    let answer = '';
    socket.on('data', (piece: Buffer) => (answer += piece.toString()));
    socket.on('error', () => undefined);
    const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
    const sentAt = Date.now();
    socket.write('GET /openai/v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n');
    // The keep-alive limit follows the idle time (Node 24 adds a second of its own); a socket kept
    // open past it would hold a file descriptor for as long as the client liked.
    const closedAt = await Promise.race([closed, sleep(IDLE_MS + 5000).then(() => undefined)]);
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(closedAt, 'the idle keep-alive connection was never closed').toBeDefined();
    expect((closedAt ?? 0) - sentAt).toBeGreaterThanOrEqual(IDLE_MS);
    expect((await h.send('/openai/v1/models', { headers: bearer(token) })).status).toBe(200);
  });

  it('an idle HTTP/2 session is asked to go away; a session with a stream open finishes it', async () => {
    const idle = await h2Connect(h.url, h.ca);
    const wentAway = new Promise<void>((resolve) => idle.once('goaway', () => resolve()));
    const busy = await h2Connect(h.url, h.ca);
    try {
      const answer = await h2Request(busy, {
        ':method': 'GET',
        ':path': `/openai/slow?ms=${IDLE_MS * 4}`,
        ...bearer(token),
        origin: 'https://app.example.com',
      });
      expect(answer.status).toBe(200);
      await wentAway;
    } finally {
      await h2Close(busy);
      idle.destroy();
    }
  });
});
