import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { bearer, startProxyHarness, type ProxyHarness } from './harness.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

describe('graceful shutdown', () => {
  let h: ProxyHarness;
  let token: string;

  beforeAll(async () => {
    h = await startProxyHarness(sqlite);
    ({ token } = await h.createToken({}));
  });
  afterAll(async () => {
    await h.close();
  });

  it('lets in-flight requests finish within the drain time, cuts longer ones, then stops', async () => {
    const url = `${h.url}/openai`;
    const short = request(`${url}/slow?ms=300`, { dispatcher: h.dispatcher, headers: bearer(token) });
    const long = request(`${url}/slow?ms=10000`, { dispatcher: h.dispatcher, headers: bearer(token) });
    await h.mock.waitForRequests(2);
    const started = Date.now();
    const closed = h.proxy.close(1000);

    const shortRes = await short;
    expect(shortRes.statusCode).toBe(200);
    expect(await shortRes.body.json()).toMatchObject({ ok: true });
    await expect(long.then((r) => r.body.text())).rejects.toThrow();
    await closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);

    await expect(
      request(`${url}/v1/models`, { dispatcher: h.dispatcher, headers: bearer(token) }),
    ).rejects.toThrow();
    const statuses = h.records.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 499]);
  });
});
