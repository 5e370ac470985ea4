import { describe, expect, it } from 'vitest';
import { parseWindow } from '../../src/rules/duration.js';
import { databases } from '../support/databases.js';
import { useBadInputSuite } from './bad-input-setup.js';
import { expectError, ok, tokenBody, type TokenJson } from './helpers.js';

const BUILTIN_IDS = ['anthropic', 'deepseek', 'gemini', 'groq', 'mistral', 'openai', 'openrouter'];

/** Bad input gets a clear error and changes nothing (see bad-input-setup.ts). */

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`bad input to the management API (${fixture.name})`, () => {
    const suite = useBadInputSuite(fixture);
    const { post, make } = suite;

    describe('field types, missing and unknown fields', () => {
      it.each([
        ['name', { name: 5 }],
        ['name', { name: '' }],
        ['name', { name: null }],
        ['provider', { provider: 7 }],
        ['allowed_hosts', { allowed_hosts: 'x' }],
        ['allowed_hosts', { allowed_hosts: { a: 1 } }],
        ['allowed_hosts[0]', { allowed_hosts: [5] }],
        ['allowed_ips', { allowed_ips: '10.0.0.1' }],
        ['allowed_ips[1]', { allowed_ips: ['10.0.0.1', false] }],
        ['rate_limit', { rate_limit: '5/m' }],
        ['rate_limit.requests', { rate_limit: { requests: '5', window: '1m' } }],
        ['rate_limit.requests', { rate_limit: { requests: 1.5, window: '1m' } }],
        ['rate_limit.requests', { rate_limit: { requests: 0, window: '1m' } }],
        ['rate_limit.requests', { rate_limit: { requests: -1, window: '1m' } }],
        ['rate_limit.window', { rate_limit: { requests: 5, window: 60 } }],
        ['expires_at', { expires_at: 'tomorrow' }],
        ['expires_at', { expires_at: 1893456000 }],
        ['expires_at', { expires_at: '2030-01-01' }],
        ['real_key', { real_key: 12345 }],
        ['key_id', { real_key: undefined, key_id: 5 }],
      ])('refuses a wrong type or value for %s with 400 invalid_parameter', async (param, overrides) => {
        const error = expectError(await post(tokenBody(overrides)), 400, 'invalid_parameter', param);
        expect(error.message).toContain(param);
      });

      it.each(['name', 'provider', 'allowed_hosts'])(
        'refuses a body without %s with 400 missing_parameter',
        async (field) => {
          const body = Object.fromEntries(Object.entries(tokenBody()).filter(([name]) => name !== field));
          const error = expectError(await post(body), 400, 'missing_parameter', field);
          expect(error.message).toContain(field);
        },
      );

      it.each([
        ['a line break', 'ops\nteam'],
        ['a tab', 'a\tb'],
        ['a bidirectional override', 'evil\u202Eexe.live'],
        ['only spaces', '   '],
      ])('refuses a name with %s, saying what a name may hold', async (_what, name) => {
        const error = expectError(await post(tokenBody({ name })), 400, 'invalid_parameter', 'name');
        expect(error.message).toContain('no line breaks');
        expect(error.message).toContain('bidirectional-text controls');
      });

      it.each([
        ['a line break', 'prod\r\nBcc: attacker@evil.example'],
        ['a bidirectional override', 'evil\u202Eexe.live'],
        ['only spaces', '   '],
      ])('refuses a renamed token whose name has %s, as on creation (PATCH)', async (_what, name) => {
        const { c } = suite;
        const list = ok<{ data: TokenJson[] }>(await c.request('GET', '/v1/tokens'));
        const id = list.data[0]?.token_id ?? '';
        const error = expectError(
          await c.request('PATCH', `/v1/tokens/${id}`, { body: { name } }),
          400,
          'invalid_parameter',
          'name',
        );
        expect(error.message).toContain('no line breaks');
      });

      it('refuses rate_limit without requests or window, naming the nested field', async () => {
        expectError(
          await post(tokenBody({ rate_limit: { window: '1m' } })),
          400,
          'missing_parameter',
          'rate_limit.requests',
        );
        expectError(
          await post(tokenBody({ rate_limit: { requests: 5 } })),
          400,
          'missing_parameter',
          'rate_limit.window',
        );
        expectError(
          await post(tokenBody({ rate_limit: { requests: 5, window: '1m', burst: 2 } })),
          400,
          'unknown_parameter',
          'rate_limit.burst',
        );
      });

      it('refuses an empty object with a missing_parameter error', async () => {
        const error = expectError(await post({}), 400, 'missing_parameter');
        expect(['name', 'provider', 'allowed_hosts']).toContain(error.param);
      });

      it('refuses an unknown field with 400 unknown_parameter naming it', async () => {
        const error = expectError(
          await post(tokenBody({ colour: 'blue' })),
          400,
          'unknown_parameter',
          'colour',
        );
        expect(error.message).toContain('colour');
      });

      it.each([
        ['allowedHosts', 'allowed_hosts', { allowed_hosts: undefined, allowedHosts: ['localhost'] }],
        ['realKey', 'real_key', { real_key: undefined, realKey: 'sk-0123456789abcdef' }],
        ['rateLimit', 'rate_limit', { rateLimit: { requests: 5, window: '1m' } }],
        ['expiresAt', 'expires_at', { expiresAt: '2099-01-01T00:00:00.000Z' }],
        ['keyId', 'key_id', { keyId: 'key_x' }],
      ])('names the snake_case field when camelCase %s is sent', async (camel, snake, overrides) => {
        const error = expectError(await post(tokenBody(overrides)), 400, 'unknown_parameter');
        expect(error.message).toContain(camel);
        expect(error.message).toContain(snake);
      });

      it('explains an unknown provider by listing the known ones', async () => {
        for (const provider of ['nope', 'OpenAI', '']) {
          const res = await post(tokenBody({ provider }));
          if (provider === '') {
            expectError(res, 400, 'invalid_parameter', 'provider');
            continue;
          }
          const error = expectError(res, 400, 'unknown_provider', 'provider');
          expect(error.message).toContain(provider);
          for (const id of BUILTIN_IDS) expect(error.message).toContain(id);
        }
      });
    });

    describe('rate_limit.window', () => {
      it.each(['1m', '15 minutes', '30s', '1h', '1d', '90s', '2 hours', '1 day', '31d'])(
        'accepts window %j',
        async (window) => {
          const t = ok<TokenJson>(await make(tokenBody({ rate_limit: { requests: 10, window } })), 201);
          expect(t.rate_limit?.requests).toBe(10);
          const sent = parseWindow(window);
          const shown = parseWindow(t.rate_limit?.window ?? '');
          expect(sent.ok && shown.ok && sent.ms === shown.ms).toBe(true);
        },
      );

      it.each(['1x', '0s', 'm', '1.5m', '', '-1m', '1 m s', '500ms', '32d', ' 1m', '01m'])(
        'refuses window %j with 400 param rate_limit.window',
        async (window) => {
          expectError(
            await post(tokenBody({ rate_limit: { requests: 10, window } })),
            400,
            'invalid_parameter',
            'rate_limit.window',
          );
        },
      );
    });

    describe('expires_at', () => {
      it('refuses a time in the past or right now', async () => {
        for (const expiresAt of ['2000-01-01T00:00:00.000Z', new Date(Date.now() - 1000).toISOString()]) {
          const error = expectError(
            await post(tokenBody({ expires_at: expiresAt })),
            400,
            'invalid_parameter',
            'expires_at',
          );
          expect(error.message).toContain('future');
        }
      });

      it('refuses a leap second as a time it cannot store, not as one in the past', async () => {
        const error = expectError(
          await post(tokenBody({ expires_at: '2099-12-31T23:59:60Z' })),
          400,
          'invalid_parameter',
          'expires_at',
        );
        expect(error.message).toContain('leap second');
        expect(error.message).not.toContain('future');
      });

      it('refuses a time past the year 9999 in UTC, which the store could not order (it read as expired)', async () => {
        const error = expectError(
          await post(tokenBody({ expires_at: '9999-12-31T23:59:59.999-10:00' })),
          400,
          'invalid_parameter',
          'expires_at',
        );
        expect(error.message).toContain('no later than 9999-12-31T23:59:59.999Z');
        expect(error.message).toContain('send null');
        const last = ok<TokenJson>(await make(tokenBody({ expires_at: '9999-12-31T23:59:59.999Z' })), 201);
        expect(last.status).toBe('active');
      });
    });
  });
}
