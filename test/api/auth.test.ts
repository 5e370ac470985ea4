import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApiKey, newSanitizedToken } from '../../src/ids/formats.js';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import {
  createKey,
  createToken,
  errorOf,
  expectError,
  newClient,
  ok,
  snapshot,
  tokenBody,
  type Client,
  type ListJson,
  type TokenJson,
} from './helpers.js';

/** Every /v1 route, with ids of real objects of the harness account filled in by `routes()`. */
function routes(tokenId: string, keyId: string): { method: string; url: string; body?: unknown }[] {
  return [
    { method: 'POST', url: '/v1/tokens', body: tokenBody() },
    { method: 'GET', url: '/v1/tokens' },
    { method: 'GET', url: `/v1/tokens/${tokenId}` },
    { method: 'DELETE', url: `/v1/tokens/${tokenId}` },
    {
      method: 'POST',
      url: '/v1/keys',
      body: { name: 'k', provider: 'openai', real_key: 'sk-abcdefghijklmnop' },
    },
    { method: 'GET', url: '/v1/keys' },
    { method: 'GET', url: `/v1/keys/${keyId}` },
    { method: 'POST', url: `/v1/keys/${keyId}/rotate`, body: { real_key: 'sk-rotated-abcdefghijklmnop' } },
    { method: 'DELETE', url: `/v1/keys/${keyId}` },
    { method: 'GET', url: '/v1/account' },
    { method: 'PATCH', url: '/v1/account', body: { name: 'renamed' } },
    { method: 'GET', url: '/v1/providers' },
  ];
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`management API authentication (${fixture.name})`, () => {
    let h: ApiHarness;
    let owner: Client;
    let tokenId: string;
    let keyId: string;

    beforeAll(async () => {
      h = await startApiHarness(fixture);
      owner = await newClient(h, 'unlimited', 'owner');
      tokenId = (await createToken(owner)).token_id;
      keyId = (await createKey(owner)).key_id;
    });
    afterAll(async () => {
      await h.close();
    });

    it('refuses a request without Authorization with 401 missing_api_key', async () => {
      const res = await h.request('GET', '/v1/tokens', { apiKey: null });
      const error = expectError(res, 401, 'missing_api_key');
      expect(error.type).toBe('authentication');
      expect(error.message).toContain('Bearer');
    });

    it('treats an empty Authorization header as missing', async () => {
      const res = await h.request('GET', '/v1/tokens', { apiKey: null, headers: { authorization: '' } });
      expectError(res, 401, 'missing_api_key');
    });

    it.each([
      ['Bearer x', 'Bearer x'],
      ['Basic credentials', `Basic ${Buffer.from('user:pass').toString('base64')}`],
      ['a sanitized token instead of an API key', `Bearer ${newSanitizedToken()}`],
      ['an API key without the scheme', newApiKey()],
      ['an API key with a wrong prefix', `Bearer svc_pk_${'a'.repeat(43)}`],
      ['an API key one character short', `Bearer ${newApiKey().slice(0, -1)}`],
      ['an API key with characters outside base58', `Bearer svc_sk_${'0'.repeat(43)}`],
      ['two API keys', `Bearer ${newApiKey()} ${newApiKey()}`],
      ['whitespace only', '   '],
    ])('refuses a malformed Authorization header (%s) with 401 invalid_api_key', async (_label, header) => {
      const res = await h.request('GET', '/v1/tokens', { apiKey: null, headers: { authorization: header } });
      const error = expectError(res, 401, 'invalid_api_key');
      expect(error.type).toBe('authentication');
    });

    it('refuses a well-formed but unknown svc_sk_ key with 401 invalid_api_key', async () => {
      const res = await h.request('GET', '/v1/tokens', { apiKey: newApiKey() });
      expectError(res, 401, 'invalid_api_key');
    });

    it('accepts the scheme case-insensitively (bearer / BEARER)', async () => {
      for (const scheme of ['bearer', 'BEARER']) {
        const res = await h.request('GET', '/v1/account', {
          apiKey: null,
          headers: { authorization: `${scheme} ${owner.apiKey}` },
        });
        expect(res.status, res.text).toBe(200);
      }
    });

    it('requires an API key on every /v1 route, before looking at ids or bodies, and changes nothing', async () => {
      const before = await snapshot(h, owner.accountId);
      const accountBefore = ok<{ name: string }>(await owner.request('GET', '/v1/account'));
      const credentials: [string, string | null, string][] = [
        ['none', null, 'missing_api_key'],
        ['malformed', 'not-a-key', 'invalid_api_key'],
        ['unknown', newApiKey(), 'invalid_api_key'],
      ];
      for (const route of routes(tokenId, keyId)) {
        for (const [label, apiKey, code] of credentials) {
          const res = await h.request(route.method, route.url, { apiKey, body: route.body });
          expect(res.status, `${route.method} ${route.url} with ${label} key: ${res.text}`).toBe(401);
          expect(errorOf(res).code).toBe(code);
        }
      }
      // The same routes with a broken body or an id of nobody still answer 401 first.
      for (const route of routes('nope', 'nope')) {
        const res = await h.request(route.method, route.url, {
          apiKey: null,
          ...(route.body === undefined ? {} : { raw: '{broken' }),
        });
        expect(res.status, `${route.method} ${route.url}: ${res.text}`).toBe(401);
        expect(errorOf(res).code).toBe('missing_api_key');
      }
      expect(await snapshot(h, owner.accountId)).toEqual(before);
      const token = ok<TokenJson>(await owner.request('GET', `/v1/tokens/${tokenId}`));
      expect(token.status).toBe('active');
      expect(ok<{ name: string }>(await owner.request('GET', '/v1/account')).name).toBe(accountBefore.name);
    });

    it('serves every /v1 route with a valid key (the route list above is real)', async () => {
      const other = await newClient(h, 'unlimited', 'other');
      const t = (await createToken(other)).token_id;
      const k = (await createKey(other)).key_id;
      for (const route of routes(t, k)) {
        const res = await other.request(route.method, route.url, { body: route.body });
        expect([200, 201], `${route.method} ${route.url}: ${res.text}`).toContain(res.status);
      }
    });

    it('serves /v1/openapi.json, /healthz and /readyz without an API key', async () => {
      const openapi = await h.request('GET', '/v1/openapi.json', { apiKey: null });
      expect(openapi.status, openapi.text).toBe(200);
      expect((openapi.body as { openapi: string }).openapi).toMatch(/^3\.1/);
      // A bad key does not get in the way either.
      expect((await h.request('GET', '/v1/openapi.json', { apiKey: 'garbage' })).status).toBe(200);
      const health = await h.request('GET', '/healthz', { apiKey: null });
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ status: 'ok' });
      const ready = await h.request('GET', '/readyz', { apiKey: null });
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'ready' });
    });

    it('answers an unknown route with 404 route_not_found in the error shape', async () => {
      for (const [method, url] of [
        ['GET', '/v1/nope'],
        ['GET', '/v1/tokens/abc/def'],
        ['GET', '/v2/tokens'],
        ['GET', '/nope?secret=1'],
      ] as const) {
        const res = await owner.request(method, url);
        const error = expectError(res, 404, 'route_not_found');
        expect(error.type).toBe('not_found');
        // The query string is not echoed.
        expect(error.message).not.toContain('secret=1');
      }
    });

    it('answers a known path with the wrong method 405 method_not_allowed with Allow, with or without a key', async () => {
      for (const [method, url, allow] of [
        ['PUT', '/v1/tokens', 'GET, HEAD, POST'],
        ['POST', '/v1/account?secret=1', 'GET, HEAD, PATCH'],
        ['PATCH', '/v1/keys/key_x/rotate', 'POST'],
      ] as const) {
        for (const res of [
          await owner.request(method, url),
          await h.request(method, url, { apiKey: null }),
        ]) {
          const error = expectError(res, 405, 'method_not_allowed');
          expect(res.headers.allow).toBe(allow);
          expect(error.message).toContain(method);
          expect(error.message).not.toContain('secret=1');
        }
      }
    });

    it('gives every error a fresh request id, also in x-request-id', async () => {
      const a = errorOf(await h.request('GET', '/v1/tokens', { apiKey: null }));
      const b = errorOf(await h.request('GET', '/v1/tokens', { apiKey: null }));
      expect(a.request_id).not.toBe(b.request_id);
      // A client-sent request id is not trusted.
      const c = await h.request('GET', '/v1/tokens', {
        apiKey: null,
        headers: { 'x-request-id': 'client-chosen' },
      });
      expect(errorOf(c).request_id).not.toBe('client-chosen');
    });

    it('answers an internal failure in the same error shape, without a stack or internals', async () => {
      const broken = await startApiHarness(fixture);
      try {
        await broken.store.close();
        const res = await broken.request('GET', '/v1/tokens');
        expect([500, 503]).toContain(res.status);
        const error = errorOf(res);
        expect(error.type).toBe('internal');
        expect(['internal_error', 'store_unavailable']).toContain(error.code);
        expect(res.text).not.toMatch(/destroyed|kysely|node_modules|\.ts:|stack/i);
        const ready = await broken.request('GET', '/readyz', { apiKey: null });
        expect(ready.status).toBe(503);
        // The details went to the server log, under the same request id.
        expect(
          broken.logs.some((line) => line.includes(error.request_id) && line.includes('"level":"error"')),
        ).toBe(true);
      } finally {
        await broken.close();
      }
    });

    it('gives successful responses an x-request-id too', async () => {
      const res = await owner.request('GET', '/v1/tokens');
      const list = ok<ListJson<TokenJson>>(res);
      expect(list.object).toBe('list');
      expect(res.headers['x-request-id']).toMatch(/^\S+$/);
    });

    it("keeps accounts apart: one account never sees another account's tokens", async () => {
      const stranger = await newClient(h, 'unlimited', 'stranger');
      const list = ok<ListJson<TokenJson>>(await stranger.request('GET', '/v1/tokens'));
      expect(list.data).toEqual([]);
    });
  });
}
