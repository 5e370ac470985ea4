import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretDigest } from '../../src/ids/formats.js';
import { startApiHarness, type ApiHarness, type ApiResponse } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import {
  B58,
  clientFor,
  createKey,
  createToken,
  expectError,
  newClient,
  ok,
  snapshot,
  tokenBody,
  type Client,
  type ListJson,
} from './helpers.js';

interface ApiKeyJson {
  id: string;
  name: string;
  scope: 'full' | 'read';
  start: string;
  created_at: string;
}
interface CreatedApiKeyJson extends ApiKeyJson {
  api_key: string;
}

const API_KEY_ID = new RegExp(`^ak_${B58}{22}$`);
const HOST = 'dash.test:8443';

/** Every write route of the API, from its own OpenAPI document plus the hidden dashboard sign-in. */
async function writeRoutes(h: ApiHarness): Promise<[string, string][]> {
  const doc = (await h.request('GET', '/v1/openapi.json')).body as { paths: Record<string, object> };
  const routes: [string, string][] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const method of Object.keys(ops)) {
      if (method === 'get' || method === 'head') continue;
      routes.push([method.toUpperCase(), `/v1${path.replace(/\{[^}]+\}/g, 'x')}`]);
    }
  }
  return routes;
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(
    `API keys: several per account, named, read-only scope (${fixture.name})`,
    () => {
      let h: ApiHarness;

      beforeAll(async () => {
        h = await startApiHarness(fixture);
      });
      afterAll(async () => {
        await h.close();
      });

      const auditOf = async (accountId: string) =>
        (await h.store.audit.list(accountId, {}, { limit: 100 })).items.map((e) => e.id);

      async function newKey(c: Client, body: Record<string, unknown>): Promise<CreatedApiKeyJson> {
        return ok<CreatedApiKeyJson>(await c.request('POST', '/v1/api_keys', { body }), 201);
      }

      it('the account key is the first API key, "default", full scope', async () => {
        const c = await newClient(h, 'free', 'first');
        const list = ok<ListJson<ApiKeyJson>>(await c.request('GET', '/v1/api_keys'));
        expect(list.data).toHaveLength(1);
        expect(list.data[0]).toMatchObject({ name: 'default', scope: 'full', start: c.apiKey.slice(0, 11) });
        expect(list.data[0]?.id).toMatch(API_KEY_ID);
        expect(Object.keys(list.data[0] ?? {}).sort()).toEqual([
          'created_at',
          'id',
          'name',
          'scope',
          'start',
        ]);
      });

      it('creates a key shown once, stores only its digest, and the new key works', async () => {
        const c = await newClient(h, 'free', 'creator');
        const created = await newKey(c, { name: 'ci deploys' });
        expect(created).toMatchObject({ name: 'ci deploys', scope: 'full' });
        expect(created.id).toMatch(API_KEY_ID);
        expect(created.api_key).toMatch(new RegExp(`^svc_sk_${B58}{43}$`));
        const other = clientFor(h, created.api_key, c.accountId);
        const list = ok<ListJson<ApiKeyJson>>(await other.request('GET', '/v1/api_keys'));
        expect(list.data.map((k) => k.name)).toEqual(['ci deploys', 'default']);
        expect(JSON.stringify(list)).not.toContain(created.api_key);
        const found = await h.store.apiKeys.findLive(secretDigest(created.api_key));
        expect(found?.key).toMatchObject({ id: created.id, name: 'ci deploys', scope: 'full' });
        expect(await h.store.apiKeys.findLive(created.api_key)).toBeUndefined();
      });

      it('pages through keys with a cursor and refuses bad bodies naming the field', async () => {
        const c = await newClient(h, 'free', 'pager');
        for (const name of ['a', 'b', 'c']) await newKey(c, { name });
        const first = ok<ListJson<ApiKeyJson>>(await c.request('GET', '/v1/api_keys?limit=2'));
        expect(first.has_more).toBe(true);
        const second = ok<ListJson<ApiKeyJson>>(
          await c.request('GET', `/v1/api_keys?limit=2&cursor=${first.next_cursor ?? ''}`),
        );
        expect([...first.data, ...second.data].map((k) => k.name)).toEqual(['c', 'b', 'a', 'default']);
        expectError(await c.request('POST', '/v1/api_keys', { body: {} }), 400, 'missing_parameter', 'name');
        expectError(
          await c.request('POST', '/v1/api_keys', { body: { name: 'x', scope: 'admin' } }),
          400,
          'invalid_parameter',
          'scope',
        );
        expectError(
          await c.request('POST', '/v1/api_keys', { body: { name: 'x', key: 'svc_sk_x' } }),
          400,
          'unknown_parameter',
          'key',
        );
      });

      it('DELETE ends a key at once (401 on its next request); a second DELETE is 404; other accounts cannot', async () => {
        const c = await newClient(h, 'free', 'deleter');
        const created = await newKey(c, { name: 'temp' });
        const temp = clientFor(h, created.api_key, c.accountId);
        ok(await temp.request('GET', '/v1/account'));
        const stranger = await newClient(h, 'free', 'stranger');
        expectError(
          await stranger.request('DELETE', `/v1/api_keys/${created.id}`),
          404,
          'api_key_not_found',
          'id',
        );
        ok(await temp.request('GET', '/v1/account'));
        const deleted = ok<ApiKeyJson>(await c.request('DELETE', `/v1/api_keys/${created.id}`));
        expect(deleted).toMatchObject({ id: created.id, name: 'temp' });
        expectError(await temp.request('GET', '/v1/account'), 401, 'invalid_api_key');
        expectError(await c.request('DELETE', `/v1/api_keys/${created.id}`), 404, 'api_key_not_found', 'id');
        expectError(await c.request('DELETE', '/v1/api_keys/nope'), 404, 'api_key_not_found', 'id');
        // A key may delete itself (rotating by hand: make a new key, then delete the old one with it).
        const self = await newKey(c, { name: 'self' });
        ok(await h.request('DELETE', `/v1/api_keys/${self.id}`, { apiKey: self.api_key }));
        expectError(await h.request('GET', '/v1/account', { apiKey: self.api_key }), 401, 'invalid_api_key');
      });

      it('a read-only key reads everything', async () => {
        const c = await newClient(h, 'unlimited', 'reader-reads');
        const token = await createToken(c);
        const reader = clientFor(
          h,
          (await newKey(c, { name: 'grafana', scope: 'read' })).api_key,
          c.accountId,
        );
        for (const url of [
          '/v1/account',
          '/v1/tokens',
          `/v1/tokens/${token.token_id}`,
          '/v1/keys',
          '/v1/api_keys',
          '/v1/audit',
          '/v1/events',
          '/v1/webhooks',
          '/v1/logs',
          '/v1/anomalies',
          '/v1/providers',
        ]) {
          expect((await reader.request('GET', url)).status, url).toBe(200);
        }
      });

      it('a read-only key is refused with 403 insufficient_scope on every write route, and nothing changes', async () => {
        const c = await newClient(h, 'unlimited', 'reader-writes');
        const token = await createToken(c);
        const key = await createKey(c);
        const readKey = await newKey(c, { name: 'grafana', scope: 'read' });
        const reader = clientFor(h, readKey.api_key, c.accountId);
        const routes = await writeRoutes(h);
        // The table covers every write route of the document; a new route cannot slip past it.
        expect(routes.length).toBeGreaterThanOrEqual(12);
        for (const required of [
          'POST /v1/tokens',
          'DELETE /v1/api_keys/x',
          'PATCH /v1/account',
          'POST /v1/api_keys',
        ]) {
          expect(routes.map(([m, p]) => `${m} ${p}`)).toContain(required);
        }
        // Real ids and valid bodies where a route takes them, so only the scope can be the reason.
        const bodies: Record<string, unknown> = {
          'POST /v1/tokens': tokenBody(),
          'POST /v1/keys': { name: 'k', provider: 'openai', real_key: 'sk-test-0123456789abcdef' },
          'POST /v1/api_keys': { name: 'escalate', scope: 'full' },
          'PATCH /v1/account': { name: 'renamed' },
          'POST /v1/webhooks': { url: 'https://hooks.example.com/x', events: ['*'] },
        };
        const ids: Record<string, string> = {
          tokens: token.token_id,
          keys: key.key_id,
          api_keys: readKey.id,
        };
        const before = await snapshot(h, c.accountId);
        const account = ok(await c.request('GET', '/v1/account'));
        const audited = await auditOf(c.accountId);
        for (const [method, template] of routes) {
          const path = template.replace(/\/v1\/(\w+)\/x/, (whole, kind: string) =>
            ids[kind] === undefined ? whole : `/v1/${kind}/${ids[kind]}`,
          );
          const res = await reader.request(method, path, { body: bodies[`${method} ${template}`] ?? {} });
          const error = expectError(res, 403, 'insufficient_scope');
          expect(error.message, `${method} ${path}`).toContain('"grafana" is read-only');
        }
        expect(await snapshot(h, c.accountId)).toEqual(before);
        expect(ok(await c.request('GET', '/v1/account'))).toEqual(account);
        const keys = ok<ListJson<ApiKeyJson>>(await c.request('GET', '/v1/api_keys'));
        expect(keys.data.map((k) => k.name).sort()).toEqual(['default', 'grafana']);
        expect(await auditOf(c.accountId)).toEqual(audited);
        // The same key still reads, and a full key of the account still writes.
        ok(await reader.request('GET', '/v1/tokens'));
        ok(await c.request('PATCH', '/v1/account', { body: { name: 'renamed' } }));
      });

      it('a read-only key cannot open a dashboard session (a session may write)', async () => {
        const c = await newClient(h, 'free', 'reader-dashboard');
        const readKey = await newKey(c, { name: 'viewer', scope: 'read' });
        const signIn = async (apiKey: string): Promise<ApiResponse> => {
          const res = await h.app.inject({
            method: 'POST',
            url: '/v1/session',
            remoteAddress: '192.0.2.77',
            headers: { host: HOST, origin: `https://${HOST}`, 'content-type': 'application/json' },
            payload: JSON.stringify({ api_key: apiKey }),
          });
          return {
            status: res.statusCode,
            headers: res.headers as ApiResponse['headers'],
            text: res.body,
            body: JSON.parse(res.body) as unknown,
          };
        };
        const refused = await signIn(readKey.api_key);
        expectError(refused, 403, 'insufficient_scope', 'api_key');
        expect(refused.headers['set-cookie']).toBeUndefined();
        expect((await signIn(c.apiKey)).status).toBe(201);
      });
    },
  );
}
