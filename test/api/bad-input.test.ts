import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseWindow } from '../../src/rules/duration.js';
import { startApiHarness, type ApiHarness, type ApiResponse } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import {
  createKey,
  createToken,
  expectError,
  newClient,
  ok,
  snapshot,
  tokenBody,
  type Client,
  type TokenJson,
} from './helpers.js';

/**
 * Bad input gets a clear error naming the problem, and changes nothing: every refused request below
 * is followed by a check that the account's tokens and keys are exactly as before.
 */

const BUILTIN_IDS = ['anthropic', 'deepseek', 'gemini', 'groq', 'mistral', 'openai', 'openrouter'];

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`bad input to the management API (${fixture.name})`, () => {
    let h: ApiHarness;
    let c: Client;
    let maker: Client;
    let before: Awaited<ReturnType<typeof snapshot>>;

    beforeAll(async () => {
      h = await startApiHarness(fixture);
      c = await newClient(h, 'unlimited', 'bad-input');
      maker = await newClient(h, 'unlimited', 'maker');
      // Some state that a bad request could disturb.
      await createKey(c);
      ok(await c.request('POST', '/v1/tokens', { body: tokenBody() }), 201);
    });
    afterAll(async () => {
      await h.close();
    });
    beforeEach(async () => {
      before = await snapshot(h, c.accountId);
    });
    afterEach(async () => {
      // Requests that are meant to succeed go through `maker`, another account: `c` must be untouched.
      expect(await snapshot(h, c.accountId)).toEqual(before);
    });

    const post = (body: unknown): Promise<ApiResponse> => c.request('POST', '/v1/tokens', { body });
    const make = (body: unknown): Promise<ApiResponse> => maker.request('POST', '/v1/tokens', { body });
    const postRaw = (raw: string, contentType = 'application/json'): Promise<ApiResponse> =>
      c.request('POST', '/v1/tokens', { raw, headers: { 'content-type': contentType } });

    describe('body shape', () => {
      it('refuses malformed JSON with 400 invalid_json', async () => {
        for (const raw of ['{', '{"name": }', "{'name': 'x'}", '{"name":"x",}', 'nul', '{"a":1}{"b":2}']) {
          const error = expectError(await postRaw(raw), 400, 'invalid_json');
          expect(error.type).toBe('invalid_request');
          expect(error.message).toMatch(/JSON/);
        }
      });

      it('refuses an empty body', async () => {
        expectError(await postRaw(''), 400, 'invalid_json');
        // No body and no content type at all.
        expectError(await c.request('POST', '/v1/tokens'), 400, 'invalid_json');
        expectError(await c.request('POST', '/v1/keys'), 400, 'invalid_json');
        expectError(await c.request('PATCH', '/v1/account'), 400, 'invalid_json');
      });

      it('takes Content-Type: application/json with an empty body as no body (curl habits)', async () => {
        // What `curl -X DELETE -H 'Content-Type: application/json' -d ''` sends.
        const json = { raw: '', headers: { 'content-type': 'application/json', 'content-length': '0' } };
        const created = await createToken(maker);
        const revoked = ok<TokenJson>(await maker.request('DELETE', `/v1/tokens/${created.token_id}`, json));
        expect(revoked.status).toBe('revoked');
        ok(await maker.request('GET', '/v1/tokens', json));
        ok(await maker.request('GET', '/v1/account', json));
        // A body that is there but is not JSON is still refused, on any method.
        expectError(
          await maker.request('DELETE', `/v1/tokens/${created.token_id}`, {
            raw: '{',
            headers: { 'content-type': 'application/json' },
          }),
          400,
          'invalid_json',
        );
        // And a POST that needs a body still says so.
        expectError(await postRaw(''), 400, 'invalid_json');
      });

      it.each([
        ['an array', '[]'],
        ['an array of the right object', JSON.stringify([tokenBody()])],
        ['a string', '"hello"'],
        ['a number', '42'],
        ['true', 'true'],
        ['null', 'null'],
      ])('refuses a JSON body that is %s with a 400 asking for an object', async (_label, raw) => {
        const error = expectError(await postRaw(raw), 400, 'invalid_json');
        expect(error.message).toMatch(/object/);
      });

      it('refuses a body over 1 MB with 413 body_too_large', async () => {
        const big = JSON.stringify(tokenBody({ name: 'x'.repeat(1024 * 1024) }));
        const error = expectError(await postRaw(big), 413, 'body_too_large');
        expect(error.message).toContain('1 MB');
        // Also on other routes with bodies.
        expectError(
          await c.request('PATCH', '/v1/account', {
            raw: JSON.stringify({ name: 'y'.repeat(1024 * 1024 + 10) }),
          }),
          413,
          'body_too_large',
        );
      });

      it('accepts a body just under 1 MB as far as size goes (then validates it)', async () => {
        // 1 MB minus a little: not refused for size, refused for the over-long name instead.
        const body = JSON.stringify(tokenBody({ name: 'x'.repeat(1024 * 1024 - 200) }));
        expect(body.length).toBeLessThan(1024 * 1024);
        expectError(await postRaw(body), 400, 'invalid_parameter', 'name');
      });

      it.each([
        'text/plain',
        'application/xml',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/vnd.api+json',
      ])('refuses Content-Type %s with 415 unsupported_media_type', async (contentType) => {
        const error = expectError(
          await postRaw(JSON.stringify(tokenBody()), contentType),
          415,
          'unsupported_media_type',
        );
        expect(error.message).toContain('application/json');
      });

      it('accepts application/json with a charset parameter', async () => {
        ok(
          await maker.request('POST', '/v1/tokens', {
            raw: JSON.stringify(tokenBody()),
            headers: { 'content-type': 'application/json; charset=utf-8' },
          }),
          201,
        );
      });
    });

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

    describe('allowed_hosts', () => {
      it('refuses an empty list with 400 naming allowed_hosts', async () => {
        const error = expectError(
          await post(tokenBody({ allowed_hosts: [] })),
          400,
          'invalid_parameter',
          'allowed_hosts',
        );
        expect(error.message).toContain('allowed_hosts');
      });

      it.each([
        '',
        'a b.com',
        'https://a.com/path',
        '*.com',
        'a.*.com',
        '*example.com',
        'example.com:99999',
        'example.com:8080',
        'ftp://a.com',
        'http://a.com:0',
        'user@a.com',
        'https://user:pass@a.com',
        'https://*.example.com',
        'http://a.com:70000',
        'a..com',
        '-a.com',
        'a.com?x=1',
        '::1',
        '*',
        'https://',
        'exa\tmple.com',
        '999.1.1.1',
      ])('refuses allowed_hosts entry %j with 400 naming allowed_hosts[i] and the entry', async (entry) => {
        const error = expectError(
          await post(tokenBody({ allowed_hosts: ['localhost', entry] })),
          400,
          'invalid_parameter',
          'allowed_hosts[1]',
        );
        expect(error.message).toContain(JSON.stringify(entry));
      });

      it('accepts valid entries and stores them normalised', async () => {
        const t = ok<TokenJson>(
          await make(
            tokenBody({
              allowed_hosts: [
                'localhost',
                'app.example.com',
                '*.example.com',
                'https://app.example.com:8443',
                'http://localhost:3000',
                'bücher.example',
                '[::1]',
                '127.0.0.1',
                'APP.Example.COM',
                'https://Secure.Example.com:443',
                'https://app.example.com/',
                'example.com.',
              ],
            }),
          ),
          201,
        );
        expect(t.authorized_origins).toEqual([
          'localhost',
          'app.example.com',
          '*.example.com',
          'https://app.example.com:8443',
          'http://localhost:3000',
          'xn--bcher-kva.example',
          '[::1]',
          '127.0.0.1',
          'https://secure.example.com',
          'https://app.example.com',
          'example.com',
        ]);
      });

      it.each([
        'localhost',
        'app.example.com',
        '*.example.com',
        'https://app.example.com:8443',
        'http://localhost:3000',
        '[::1]',
        '127.0.0.1',
      ])('accepts %s on its own', async (entry) => {
        const t = ok<TokenJson>(await make(tokenBody({ allowed_hosts: [entry] })), 201);
        expect(t.authorized_origins).toEqual([entry]);
      });
    });

    describe('allowed_ips', () => {
      it.each([
        'garbage',
        '10.0.0.0/33',
        '10.0.0.1/8',
        '300.1.1.1',
        '2001:db8::/129',
        '',
        '10.0.0.1 ',
        'fe80::1%eth0',
      ])('refuses allowed_ips entry %j with 400 naming allowed_ips[i] and the entry', async (entry) => {
        const error = expectError(
          await post(tokenBody({ allowed_ips: ['10.0.0.1', entry] })),
          400,
          'invalid_parameter',
          'allowed_ips[1]',
        );
        expect(error.message).toContain(JSON.stringify(entry));
      });

      it('accepts addresses and ranges of both families, normalised', async () => {
        const t = ok<TokenJson>(
          await make(
            tokenBody({
              allowed_ips: ['10.0.0.0/8', '192.168.1.7', '2001:DB8::/32', '::ffff:10.1.2.3', '10.0.0.0/8'],
            }),
          ),
          201,
        );
        expect(t.authorized_ips).toEqual(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32', '10.1.2.3']);
        const empty = ok<TokenJson>(await make(tokenBody({ allowed_ips: [] })), 201);
        expect(empty.authorized_ips).toEqual([]);
      });
    });

    describe('real_key and key_id', () => {
      it.each([
        ['empty', ''],
        ['over 4096 characters', `sk-${'a'.repeat(4094)}`],
        ['with a space', 'sk-abc def-0123456789'],
        ['with a newline', 'sk-abc\ndef-0123456789'],
        ['with CR LF', 'sk-abc\r\nX-Injected: 1'],
        ['with a tab', 'sk-abc\tdef'],
        ['with a NUL', 'sk-abc\u0000def'],
        ['with non-ASCII', 'sk-abcé-0123456789'],
      ])('refuses a real_key %s with 400 param real_key', async (_label, realKey) => {
        const res = await post(tokenBody({ real_key: realKey }));
        expectError(res, 400, 'invalid_parameter', 'real_key');
        if (realKey.length > 8) expect(res.text).not.toContain(realKey);
      });

      it('accepts a real_key of exactly 4096 characters', async () => {
        ok(await make(tokenBody({ real_key: `sk-${'b'.repeat(4093)}` })), 201);
      });

      it('refuses both real_key and key_id with 400', async () => {
        const key = (await h.store.keys.list(c.accountId, { limit: 1 })).items[0];
        const error = expectError(await post(tokenBody({ key_id: key?.id })), 400, 'invalid_parameter');
        expect(error.message).toContain('real_key');
        expect(error.message).toContain('key_id');
      });

      it('refuses neither real_key nor key_id with 400 missing_parameter real_key', async () => {
        const error = expectError(
          await post(tokenBody({ real_key: undefined })),
          400,
          'missing_parameter',
          'real_key',
        );
        expect(error.message).toContain('key_id');
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
    });

    describe('other routes', () => {
      it('refuses bad bodies on /v1/keys and rotate, and bad ids, changing nothing', async () => {
        const key = (await h.store.keys.list(c.accountId, { limit: 1 })).items[0];
        const keyId = key?.id ?? '';
        expectError(await c.request('POST', '/v1/keys', { raw: '{' }), 400, 'invalid_json');
        expectError(await c.request('POST', '/v1/keys', { body: [] }), 400, 'invalid_json');
        expectError(
          await c.request('POST', '/v1/keys', {
            body: { name: 'k', provider: 'openai', realKey: 'sk-0123456789abcdef' },
          }),
          400,
          'unknown_parameter',
        );
        expectError(
          await c.request('POST', `/v1/keys/${keyId}/rotate`, { raw: 'nope' }),
          400,
          'invalid_json',
        );
        expectError(
          await c.request('POST', `/v1/keys/${keyId}/rotate`, { body: { real_key: 5 } }),
          400,
          'invalid_parameter',
          'real_key',
        );
        expectError(
          await c.request('POST', `/v1/keys/${keyId}/rotate`, {
            raw: 'sk-x',
            headers: { 'content-type': 'text/plain' },
          }),
          415,
          'unsupported_media_type',
        );
        expectError(await c.request('PATCH', '/v1/account', { raw: '{"name":' }), 400, 'invalid_json');
      });
    });
  });
}
