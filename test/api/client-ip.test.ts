import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import { expectError } from './helpers.js';

const HOST = 'dash.test:8443';
const ORIGIN = `https://${HOST}`;
const BALANCER = '10.0.0.5';
const WRONG = `svc_sk_${'1'.repeat(43)}`;

/**
 * The management listener reads the caller's address as the proxy does: behind a trusted load
 * balancer every request comes from the balancer's socket, and the sign-in backoff and the audit log
 * must see the client in X-Forwarded-For, or one guesser locks every user out.
 */
for (const fixture of databases.filter((d) => d.name === 'sqlite')) {
  describe.skipIf(!fixture.available)('the management API behind a load balancer', () => {
    let behind: ApiHarness;
    let direct: ApiHarness;
    beforeAll(async () => {
      behind = await startApiHarness(fixture, { trustProxy: ['10.0.0.0/8'] });
      direct = await startApiHarness(fixture);
    });
    afterAll(async () => {
      await behind.close();
      await direct.close();
    });

    const signIn = (h: ApiHarness, apiKey: string, forwardedFor: string) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/session',
        remoteAddress: BALANCER,
        headers: {
          host: HOST,
          origin: ORIGIN,
          'content-type': 'application/json',
          'x-forwarded-for': forwardedFor,
        },
        payload: JSON.stringify({ api_key: apiKey }),
      });
    const asResponse = (res: Awaited<ReturnType<typeof signIn>>) => ({
      status: res.statusCode,
      headers: res.headers as Record<string, string>,
      text: res.body,
      body: JSON.parse(res.body || 'null') as unknown,
    });

    it('with trust_proxy, a guesser behind the balancer is slowed down, the other users are not', async () => {
      expectError(asResponse(await signIn(behind, WRONG, '198.51.100.7')), 401, 'invalid_api_key');
      expectError(asResponse(await signIn(behind, WRONG, '198.51.100.7')), 429, 'too_many_attempts');
      // Another user, through the same balancer.
      expect((await signIn(behind, behind.apiKey, '198.51.100.8')).statusCode).toBe(201);
    });

    it('with trust_proxy, the audit log names the client, not the balancer', async () => {
      const res = await behind.app.inject({
        method: 'PATCH',
        url: '/v1/account',
        remoteAddress: BALANCER,
        headers: {
          authorization: `Bearer ${behind.apiKey}`,
          'content-type': 'application/json',
          'x-forwarded-for': '203.0.113.9, 10.0.0.7',
        },
        payload: JSON.stringify({ name: 'renamed' }),
      });
      expect(res.statusCode, res.body).toBe(200);
      const audit = await behind.request('GET', '/v1/audit?action=account.updated');
      expect((audit.body as { data: { ip: string }[] }).data[0]?.ip).toBe('203.0.113.9');
    });

    it('without trust_proxy, X-Forwarded-For is not believed: a forged one does not dodge the backoff', async () => {
      expectError(asResponse(await signIn(direct, WRONG, '198.51.100.20')), 401, 'invalid_api_key');
      expectError(asResponse(await signIn(direct, WRONG, '198.51.100.21')), 429, 'too_many_attempts');
    });
  });
}
