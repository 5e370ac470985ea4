import { describe, expect, it } from 'vitest';
import { startApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import {
  SECOND,
  Clock,
  createKey,
  createToken,
  expectError,
  newClient,
  ok,
  snapshot,
  type KeyJson,
  type ListJson,
  type TokenJson,
} from './helpers.js';
import { useApiHarness } from './use-api-harness.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`tokens API (${fixture.name})`, () => {
    const clock = new Clock();
    const h = useApiHarness(fixture, { now: clock.now });

    describe('plan limits', () => {
      it('refuses a 4th active token on the free plan with 403 plan_limit_exceeded, and allows it after a revoke', async () => {
        const c = await newClient(h, 'free', 'free');
        const tokens = [await createToken(c), await createToken(c), await createToken(c)];
        const before = await snapshot(h, c.accountId);
        const res = await c.request('POST', '/v1/tokens', {
          body: {
            name: 'fourth',
            provider: 'openai',
            allowed_hosts: ['localhost'],
            real_key: 'sk-fourth-0123456789ab',
          },
        });
        const error = expectError(res, 403, 'plan_limit_exceeded');
        expect(error.type).toBe('plan_limit');
        expect(error.message).toContain('3');
        // Nothing was created, not even the key the token would have had.
        expect(await snapshot(h, c.accountId)).toEqual(before);
        // With an existing key too.
        const key = await createKey(c);
        expectError(
          await c.request('POST', '/v1/tokens', {
            body: { name: 'fourth', provider: 'openai', allowed_hosts: ['localhost'], key_id: key.key_id },
          }),
          403,
          'plan_limit_exceeded',
        );
        ok(await c.request('DELETE', `/v1/tokens/${tokens[0]?.token_id ?? ''}`));
        const fourth = await createToken(c, { name: 'fourth' });
        expect(fourth.status).toBe('active');
        expectError(
          await c.request('POST', '/v1/tokens', {
            body: {
              name: 'fifth',
              provider: 'openai',
              allowed_hosts: ['localhost'],
              real_key: 'sk-fifth-0123456789ab',
            },
          }),
          403,
          'plan_limit_exceeded',
        );
      });

      it('counts concurrent creations correctly: never more than 3 active tokens', async () => {
        const c = await newClient(h, 'free', 'racer');
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            c.request('POST', '/v1/tokens', {
              body: {
                name: `r${i}`,
                provider: 'openai',
                allowed_hosts: ['localhost'],
                real_key: 'sk-race-0123456789abcd',
              },
            }),
          ),
        );
        expect(results.filter((r) => r.status === 201)).toHaveLength(3);
        for (const r of results.filter((x) => x.status !== 201)) expectError(r, 403, 'plan_limit_exceeded');
        expect(ok<ListJson<TokenJson>>(await c.request('GET', '/v1/tokens')).data).toHaveLength(3);
        // The refused creations left no orphan keys behind.
        expect(ok<ListJson<KeyJson>>(await c.request('GET', '/v1/keys')).data).toHaveLength(3);
      });

      it('shows expired tokens as expired and does not count them toward the plan', async () => {
        const c = await newClient(h, 'free', 'expiry');
        const soon = new Date(clock.now().getTime() + 30 * SECOND).toISOString();
        const expiring = await createToken(c, { expires_at: soon });
        await createToken(c);
        await createToken(c);
        expectError(
          await c.request('POST', '/v1/tokens', {
            body: {
              name: 'x',
              provider: 'openai',
              allowed_hosts: ['localhost'],
              real_key: 'sk-x-0123456789abcdef',
            },
          }),
          403,
          'plan_limit_exceeded',
        );
        clock.advance(31 * SECOND);
        const got = ok<TokenJson>(await c.request('GET', `/v1/tokens/${expiring.token_id}`));
        expect(got.status).toBe('expired');
        expect(got.expires_at).toBe(soon);
        expect(got.revoked_at).toBeNull();
        const listed = ok<ListJson<TokenJson>>(await c.request('GET', '/v1/tokens')).data.find(
          (t) => t.token_id === expiring.token_id,
        );
        expect(listed?.status).toBe('expired');
        const account = ok<{ usage: { active_tokens: number } }>(await c.request('GET', '/v1/account'));
        expect(account.usage.active_tokens).toBe(2);
        const fourth = await createToken(c, { name: 'after expiry' });
        expect(fourth.status).toBe('active');
        // Revoking an expired token works and shows it revoked.
        const revoked = ok<TokenJson>(await c.request('DELETE', `/v1/tokens/${expiring.token_id}`));
        expect(revoked.status).toBe('revoked');
      });

      it('shows a token as expired right at expires_at (real time, short wait)', async () => {
        const real = await startApiHarness(fixture);
        try {
          const c = await newClient(real, 'free', 'real-time');
          const t = await createToken(c, { expires_at: new Date(Date.now() + 1200).toISOString() });
          expect(t.status).toBe('active');
          await new Promise((resolve) => setTimeout(resolve, 1500));
          expect(ok<TokenJson>(await c.request('GET', `/v1/tokens/${t.token_id}`)).status).toBe('expired');
        } finally {
          await real.close();
        }
      });

      it('has no token cap on the unlimited plan', async () => {
        const c = await newClient(h, 'unlimited', 'big');
        for (let i = 0; i < 5; i++) await createToken(c);
        expect(ok<ListJson<TokenJson>>(await c.request('GET', '/v1/tokens')).data).toHaveLength(5);
      });
    });
  });
}
