import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Provider } from '../../src/providers/providers.js';
import { PROXY_URL, startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import {
  ISO_MS,
  createToken,
  expectError,
  newClient,
  ok,
  type AccountJson,
  type ListJson,
  type ProviderJson,
} from './helpers.js';

const ACCOUNT_FIELDS = [
  'account_id',
  'alert_email',
  'budget',
  'created_at',
  'limits',
  'name',
  'plan',
  'retention',
  'usage',
];

const CUSTOM: Provider = {
  id: 'acme',
  baseUrl: 'https://llm.acme.test',
  auth: { kind: 'header', header: 'x-acme-key' },
  builtin: false,
};

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`account and providers API (${fixture.name})`, () => {
    // A fixed clock in the middle of a month, so period_start is known exactly.
    const fixedNow = new Date('2026-07-15T12:34:56.789Z');
    let current = fixedNow;
    let h: ApiHarness;

    beforeAll(async () => {
      h = await startApiHarness(fixture, { providers: [CUSTOM], now: () => current });
    });
    afterAll(async () => {
      await h.close();
    });

    describe('GET /v1/account', () => {
      it('shows the account with plan, limits and usage', async () => {
        const res = await h.request('GET', '/v1/account');
        const a = ok<AccountJson>(res);
        expect(Object.keys(a).sort()).toEqual(ACCOUNT_FIELDS);
        expect(a.account_id).toBe(h.accountId);
        expect(a.account_id).toMatch(/^acct_[1-9A-HJ-NP-Za-km-z]{22}$/);
        expect(a.name).toBe('harness');
        expect(a.plan).toBe('free');
        expect(a.limits).toEqual({ active_tokens: 3, requests_per_month: 100000 });
        expect(Object.keys(a.usage).sort()).toEqual(['active_tokens', 'period_start', 'requests']);
        expect(a.usage.period_start).toBe('2026-07-01T00:00:00.000Z');
        expect(a.usage.requests).toBe(0);
        expect(a.usage.active_tokens).toBe(0);
        expect(a.alert_email).toBeNull();
        expect(a.created_at).toMatch(ISO_MS);
        expect(a.created_at).toBe(fixedNow.toISOString());
        // Nothing secret about the account's API key is shown.
        expect(res.text).not.toContain(h.apiKey);
        expect(res.text).not.toContain(h.apiKey.slice(7));
      });

      it('counts active tokens only', async () => {
        const c = await newClient(h, 'free', 'counter');
        const a = await createToken(c);
        await createToken(c);
        await createToken(c, { expires_at: '2026-07-15T12:35:00.000Z' });
        expect(ok<AccountJson>(await c.request('GET', '/v1/account')).usage.active_tokens).toBe(3);
        ok(await c.request('DELETE', `/v1/tokens/${a.token_id}`));
        expect(ok<AccountJson>(await c.request('GET', '/v1/account')).usage.active_tokens).toBe(2);
      });

      it('shows the unlimited plan with null limits', async () => {
        const c = await newClient(h, 'unlimited', 'operator');
        const a = ok<AccountJson>(await c.request('GET', '/v1/account'));
        expect(a.plan).toBe('unlimited');
        expect(a.limits).toEqual({ active_tokens: null, requests_per_month: null });
      });

      it('puts period_start at the first instant of the UTC month, also on the first and last day', async () => {
        try {
          for (const [at, start] of [
            ['2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
            ['2026-02-28T23:59:59.999Z', '2026-02-01T00:00:00.000Z'],
            ['2026-12-31T23:59:59.999Z', '2026-12-01T00:00:00.000Z'],
          ] as const) {
            current = new Date(at);
            expect(ok<AccountJson>(await h.request('GET', '/v1/account')).usage.period_start).toBe(start);
          }
        } finally {
          current = fixedNow;
        }
      });
    });

    describe('PATCH /v1/account', () => {
      it('changes name and alert_email, and clears alert_email with null', async () => {
        const c = await newClient(h, 'free', 'before');
        const renamed = ok<AccountJson>(
          await c.request('PATCH', '/v1/account', { body: { name: 'Acme Inc.' } }),
        );
        expect(renamed.name).toBe('Acme Inc.');
        expect(renamed.alert_email).toBeNull();
        expect(Object.keys(renamed).sort()).toEqual(ACCOUNT_FIELDS);

        const withEmail = ok<AccountJson>(
          await c.request('PATCH', '/v1/account', { body: { alert_email: 'security@acme.example' } }),
        );
        expect(withEmail.alert_email).toBe('security@acme.example');
        expect(withEmail.name).toBe('Acme Inc.');

        const both = ok<AccountJson>(
          await c.request('PATCH', '/v1/account', {
            body: { name: 'Acme', alert_email: 'ops@acme.example' },
          }),
        );
        expect(both).toMatchObject({ name: 'Acme', alert_email: 'ops@acme.example' });

        const got = ok<AccountJson>(await c.request('GET', '/v1/account'));
        expect(got).toEqual(both);

        const cleared = ok<AccountJson>(
          await c.request('PATCH', '/v1/account', { body: { alert_email: null } }),
        );
        expect(cleared.alert_email).toBeNull();
        expect(cleared.name).toBe('Acme');
        expect(ok<AccountJson>(await c.request('GET', '/v1/account')).alert_email).toBeNull();

        // An empty patch changes nothing.
        expect(ok<AccountJson>(await c.request('PATCH', '/v1/account', { body: {} }))).toEqual(cleared);
      });

      it('changes only the account of the API key', async () => {
        const a = await newClient(h, 'free', 'a');
        const b = await newClient(h, 'free', 'b');
        ok(
          await a.request('PATCH', '/v1/account', {
            body: { name: 'changed', alert_email: 'a@example.com' },
          }),
        );
        const other = ok<AccountJson>(await b.request('GET', '/v1/account'));
        expect(other).toMatchObject({ name: 'b', alert_email: null });
      });

      it.each([
        [{ alert_email: 'not-an-email' }, 'invalid_parameter', 'alert_email'],
        [{ alert_email: 'a@' }, 'invalid_parameter', 'alert_email'],
        [{ alert_email: 'a b@example.com' }, 'invalid_parameter', 'alert_email'],
        [{ alert_email: 5 }, 'invalid_parameter', 'alert_email'],
        [{ alert_email: `${'a'.repeat(250)}@example.com` }, 'invalid_parameter', 'alert_email'],
        [{ name: '' }, 'invalid_parameter', 'name'],
        [{ name: null }, 'invalid_parameter', 'name'],
        [{ name: 'x'.repeat(201) }, 'invalid_parameter', 'name'],
        [{ alertEmail: 'a@example.com' }, 'unknown_parameter', 'alertEmail'],
        [{ account_id: 'acct_x' }, 'unknown_parameter', 'account_id'],
      ])('refuses %j with 400 %s naming %s, and changes nothing', async (body, code, param) => {
        const c = await newClient(h, 'free', 'unchanged');
        ok(await c.request('PATCH', '/v1/account', { body: { alert_email: 'keep@example.com' } }));
        const before = ok<AccountJson>(await c.request('GET', '/v1/account'));
        const error = expectError(await c.request('PATCH', '/v1/account', { body }), 400, code, param);
        if (param === 'alertEmail') expect(error.message).toContain('alert_email');
        expect(ok<AccountJson>(await c.request('GET', '/v1/account'))).toEqual(before);
      });

      it.each([[{ plan: 'unlimited' }], [{ name: 'x', plan: 'unlimited' }], [{ plan: 'free' }]])(
        'refuses a plan change through the API (%j) with 403 plan_change_forbidden naming the CLI, and changes nothing',
        async (body) => {
          const c = await newClient(h, 'free', 'sneaky');
          const error = expectError(
            await c.request('PATCH', '/v1/account', { body }),
            403,
            'plan_change_forbidden',
            'plan',
          );
          expect(error.message).toContain('tokenproxy accounts set-plan');
          const a = ok<AccountJson>(await c.request('GET', '/v1/account'));
          expect(a).toMatchObject({ name: 'sneaky', plan: 'free', limits: { active_tokens: 3 } });
        },
      );
    });

    describe('GET /v1/providers', () => {
      it('lists the built-in providers with auth and proxy_base_url', async () => {
        const list = ok<ListJson<ProviderJson>>(await h.request('GET', '/v1/providers'));
        expect(list.object).toBe('list');
        expect(list.has_more).toBe(false);
        expect(list.next_cursor).toBeNull();
        const byId = new Map(list.data.map((p) => [p.id, p]));
        const expected: Record<string, string> = {
          openai: 'bearer',
          anthropic: 'header:x-api-key',
          mistral: 'bearer',
          groq: 'bearer',
          openrouter: 'bearer',
          deepseek: 'bearer',
          gemini: 'header:x-goog-api-key',
        };
        for (const [id, auth] of Object.entries(expected)) {
          const p = byId.get(id);
          expect(p, `provider ${id}`).toBeDefined();
          expect(p?.auth).toBe(auth);
          expect(p?.builtin).toBe(true);
          expect(p?.base_url).toMatch(/^https:\/\//);
          expect(p?.proxy_base_url).toBe(`${PROXY_URL}/${id}`);
        }
        expect(byId.get('openai')?.base_url).toBe('https://api.openai.com');
        expect(byId.get('anthropic')?.base_url).toBe('https://api.anthropic.com');
        expect(byId.get('gemini')?.base_url).toBe('https://generativelanguage.googleapis.com');
        for (const p of list.data) {
          expect(Object.keys(p).sort()).toEqual(['auth', 'base_url', 'builtin', 'id', 'proxy_base_url']);
        }
      });

      it('refuses query parameters, as every endpoint without them does (a limit would not apply)', async () => {
        for (const [url, param] of [
          ['/v1/providers?limit=2', 'limit'],
          ['/v1/providers?cursor=x', 'cursor'],
          ['/v1/account?foo=1', 'foo'],
        ] as const) {
          const error = expectError(await h.request('GET', url), 400, 'unknown_parameter', param);
          expect(error.message, url).toMatch(/takes no query parameters/);
        }
        ok(await h.request('GET', '/v1/providers'));
      });

      it('lists a custom provider from the configuration, usable for tokens and keys', async () => {
        const list = ok<ListJson<ProviderJson>>(await h.request('GET', '/v1/providers'));
        expect(list.data.find((p) => p.id === 'acme')).toEqual({
          id: 'acme',
          base_url: 'https://llm.acme.test',
          auth: 'header:x-acme-key',
          builtin: false,
          proxy_base_url: `${PROXY_URL}/acme`,
        });
        const c = await newClient(h, 'free', 'custom');
        const t = await createToken(c, { provider: 'acme' });
        expect(t.target_provider).toBe('acme');
        expect(t.proxy_base_url).toBe(`${PROXY_URL}/acme`);
        const key = ok<{ provider: string }>(
          await c.request('POST', '/v1/keys', {
            body: { name: 'acme', provider: 'acme', real_key: 'acme-0123456789abcdef' },
          }),
          201,
        );
        expect(key.provider).toBe('acme');
        // The unknown-provider message lists the custom provider with the built-ins.
        const error = expectError(
          await c.request('POST', '/v1/tokens', {
            body: {
              name: 'x',
              provider: 'nope',
              allowed_hosts: ['localhost'],
              real_key: 'sk-0123456789abcdef',
            },
          }),
          400,
          'unknown_provider',
          'provider',
        );
        expect(error.message).toContain('acme');
      });
    });
  });
}
