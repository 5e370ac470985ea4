import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionLimits } from '../../src/config/connection-limits.js';
import { databases } from '../support/databases.js';
import { bearer, startProxyHarness, type ProxyHarness } from './harness.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

describe('upstream_max_connections: requests past it wait for a connection', () => {
  let h: ProxyHarness;
  let token: string;

  beforeAll(async () => {
    h = await startProxyHarness(sqlite, {
      config: { connections: connectionLimits({ proxy: 'auto', upstream: 1 }, undefined) },
    });
    ({ token } = await h.createToken({}));
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a waiting request is served when the connection is free; one whose caller left meanwhile never reaches the provider', async () => {
    h.mock.reset();
    const first = h.send('/openai/slow?ms=800', { headers: bearer(token) });
    await h.mock.waitForRequests(1);
    // Waits behind the first, and its caller gives up.
    const abandoned = new AbortController();
    const gone = request(`${h.url}/openai/v1/models?abandoned=1`, {
      dispatcher: h.dispatcher,
      headers: bearer(token),
      signal: abandoned.signal,
    }).catch((err: unknown) => err);
    const waiting = h.send('/openai/v1/models?waited=1', { headers: bearer(token) });
    await sleep(200);
    expect(h.mock.received).toHaveLength(1);
    abandoned.abort();
    await gone;

    expect((await first).status).toBe(200);
    expect((await waiting).status).toBe(200);
    // The provider saw the two whose callers stayed, one after the other on the one connection.
    expect(h.mock.received.map((r) => r.path)).toEqual(['/slow?ms=800', '/v1/models?waited=1']);
    expect(h.logLines.filter((l) => l.includes('upstream request failed'))).toEqual([]);
  });
});
