import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApiKey, newId, secretDigest } from '../../src/ids/formats.js';
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS } from '../../src/api/session/sessions.js';
import { startApiHarness, type ApiHarness, type ApiResponse } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import { Clock, expectError, ok, type AccountJson, type TokenJson } from './helpers.js';

const HOST = 'dash.test:8443';
const ORIGIN = `https://${HOST}`;
const HOUR = 60 * 60 * 1000;

function cookieOf(res: ApiResponse): string {
  const header = res.headers['set-cookie'];
  const line = Array.isArray(header) ? header[0] : header;
  expect(line).toBeDefined();
  return line as string;
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`dashboard sessions (${fixture.name})`, () => {
    const clock = new Clock();
    let h: ApiHarness;
    let ip = 0;
    /** Each sign-in from its own address, so one test's wrong keys never slow down another's. */
    const nextIp = () => `192.0.2.${++ip}`;

    beforeAll(async () => {
      h = await startApiHarness(fixture, { now: clock.now });
    });
    afterAll(async () => {
      await h.close();
    });

    async function signIn(
      apiKey: string,
      from = nextIp(),
      extra: Record<string, string> = {},
    ): Promise<ApiResponse> {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/session',
        remoteAddress: from,
        headers: { host: HOST, origin: ORIGIN, 'content-type': 'application/json', ...extra },
        payload: JSON.stringify({ api_key: apiKey }),
      });
      return {
        status: res.statusCode,
        headers: res.headers as ApiResponse['headers'],
        text: res.body,
        body: JSON.parse(res.body || 'null') as unknown,
      };
    }

    async function session(): Promise<string> {
      const res = await signIn(h.apiKey);
      expect(res.status, res.text).toBe(201);
      return /tokenproxy_session=([^;]+)/.exec(cookieOf(res))?.[1] as string;
    }

    const withCookie = (
      value: string,
      method: string,
      url: string,
      extra: Record<string, string> = {},
      body?: unknown,
    ) =>
      h.request(method, url, {
        apiKey: null,
        headers: { host: HOST, cookie: `tokenproxy_session=${value}`, ...extra },
        ...(body === undefined ? {} : { body }),
      });

    it('a right key opens a session: the cookie has the §12 flags, and only its digest is stored', async () => {
      const res = await signIn(h.apiKey);
      expect(res.status, res.text).toBe(201);
      const cookie = cookieOf(res);
      expect(cookie).toMatch(/^tokenproxy_session=[A-Za-z0-9_-]{43}; /);
      for (const flag of ['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/']) expect(cookie).toContain(flag);
      expect(res.text).not.toContain(h.apiKey);
      const value = /tokenproxy_session=([^;]+)/.exec(cookie)?.[1] as string;
      expect(await h.store.sessions.findLive(secretDigest(value), clock.now().toISOString())).toMatchObject({
        accountId: h.accountId,
      });
      expect(await h.store.sessions.findLive(value, clock.now().toISOString())).toBeUndefined();
      const account = ok<AccountJson>(await withCookie(value, 'GET', '/v1/account'));
      expect(account.account_id).toBe(h.accountId);
    });

    it('a wrong key is a 401 with no cookie, and repeated wrong keys from one IP get 429 with Retry-After', async () => {
      const from = nextIp();
      const wrong = `svc_sk_${'1'.repeat(43)}`;
      const first = await signIn(wrong, from);
      expectError(first, 401, 'invalid_api_key');
      expect(first.headers['set-cookie']).toBeUndefined();
      const second = await signIn(wrong, from);
      expectError(second, 429, 'too_many_attempts');
      expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Even the right key waits out the backoff: a guesser cannot tell a hit during it.
      expectError(await signIn(h.apiKey, from), 429, 'too_many_attempts');
      // Another address is not affected.
      expect((await signIn(h.apiKey)).status).toBe(201);
    });

    it('an Idempotency-Key on sign-in is ignored: each sign-in opens its own session, malformed key or not', async () => {
      const from = nextIp();
      const first = await signIn(h.apiKey, from, { 'idempotency-key': 'sign-in-1' });
      expect(first.status, first.text).toBe(201);
      const second = await signIn(h.apiKey, from, { 'idempotency-key': 'sign-in-1' });
      expect(second.status, second.text).toBe(201);
      expect(second.headers['idempotent-replayed']).toBeUndefined();
      expect(cookieOf(second)).not.toBe(cookieOf(first));
      const malformed = await signIn(h.apiKey, from, { 'idempotency-key': 'has space' });
      expect(malformed.status, malformed.text).toBe(201);
      // A wrong key is still refused as such, not as a server error.
      expectError(
        await signIn(`svc_sk_${'2'.repeat(43)}`, nextIp(), { 'idempotency-key': 'x' }),
        401,
        'invalid_api_key',
      );
    });

    it('sign-in needs the dashboard origin (no login CSRF)', async () => {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/session',
        headers: { host: HOST, origin: 'https://evil.example', 'content-type': 'application/json' },
        payload: JSON.stringify({ api_key: h.apiKey }),
      });
      expect(res.statusCode).toBe(403);
      expect(res.headers['set-cookie']).toBeUndefined();
    });

    it('with a cookie, unsafe methods need Origin equal to the dashboard origin: others are refused and change nothing', async () => {
      const value = await session();
      const before = ok<AccountJson>(await withCookie(value, 'GET', '/v1/account'));
      for (const origin of ['https://evil.example', 'null', `http://${HOST}`, `${ORIGIN}.evil.example`]) {
        expectError(
          await withCookie(value, 'PATCH', '/v1/account', { origin }, { name: 'pwned' }),
          403,
          'csrf_rejected',
        );
      }
      expectError(
        await withCookie(value, 'PATCH', '/v1/account', {}, { name: 'pwned' }),
        403,
        'csrf_rejected',
      );
      expectError(
        await withCookie(value, 'POST', '/v1/tokens/revoke_all', { origin: 'https://evil.example' }),
        403,
        'csrf_rejected',
      );
      expect(ok<AccountJson>(await withCookie(value, 'GET', '/v1/account')).name).toBe(before.name);
      // The dashboard's own origin goes through.
      const renamed = ok<AccountJson>(
        await withCookie(value, 'PATCH', '/v1/account', { origin: ORIGIN }, { name: 'renamed' }),
      );
      expect(renamed.name).toBe('renamed');
      ok(await withCookie(value, 'PATCH', '/v1/account', { origin: ORIGIN }, { name: before.name }));
    });

    it('a Bearer API key is not subject to the cookie rule', async () => {
      const tokens = ok<{ data: TokenJson[] }>(
        await h.request('GET', '/v1/tokens', { headers: { origin: 'https://evil.example' } }),
      );
      expect(Array.isArray(tokens.data)).toBe(true);
    });

    it('sign out ends the session on the server: the old cookie no longer works', async () => {
      const value = await session();
      ok(await withCookie(value, 'GET', '/v1/account'));
      expectError(
        await withCookie(value, 'DELETE', '/v1/session', { origin: 'https://evil.example' }),
        403,
        'csrf_rejected',
      );
      const out = await withCookie(value, 'DELETE', '/v1/session', { origin: ORIGIN });
      expect(out.status).toBe(204);
      expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
      expectError(await withCookie(value, 'GET', '/v1/account'), 401, 'session_expired');
    });

    it('a session ends with its API key: deleted through the API, or replaced as `accounts rotate-key` does', async () => {
      const created = ok<{ id: string; api_key: string }>(
        await h.request('POST', '/v1/api_keys', { body: { name: 'laptop' } }),
        201,
      );
      const res = await signIn(created.api_key);
      expect(res.status, res.text).toBe(201);
      const value = /tokenproxy_session=([^;]+)/.exec(cookieOf(res))?.[1] as string;
      ok(await withCookie(value, 'GET', '/v1/account'));
      // Another session, opened with the harness's own key, is not touched by it.
      const other = await session();
      ok(await h.request('DELETE', `/v1/api_keys/${created.id}`), 200);
      expectError(await withCookie(value, 'GET', '/v1/account'), 401, 'session_expired');
      expectError(
        await withCookie(value, 'PATCH', '/v1/account', { origin: ORIGIN }, { alert_email: null }),
        401,
        'session_expired',
      );
      ok(await withCookie(other, 'GET', '/v1/account'));

      // What the CLI's rotate-key does: the key's live row is replaced by a new one.
      const again = ok<{ id: string; api_key: string }>(
        await h.request('POST', '/v1/api_keys', { body: { name: 'desk' } }),
        201,
      );
      const signedIn = await signIn(again.api_key);
      const rotated = /tokenproxy_session=([^;]+)/.exec(cookieOf(signedIn))?.[1] as string;
      ok(await withCookie(rotated, 'GET', '/v1/account'));
      await h.store.apiKeys.replace(
        {
          id: newId('apiKey'),
          accountId: h.accountId,
          name: 'desk',
          digest: secretDigest(newApiKey()),
          start: 'svc_sk_zz',
          createdAt: clock.now().toISOString(),
        },
        clock.now().toISOString(),
      );
      expectError(await withCookie(rotated, 'GET', '/v1/account'), 401, 'session_expired');
    });

    it('a session ends after 12 h idle, use keeps it alive, and it ends after 7 days regardless', async () => {
      const value = await session();
      clock.advance(SESSION_IDLE_MS - HOUR);
      ok(await withCookie(value, 'GET', '/v1/account'));
      clock.advance(SESSION_IDLE_MS - HOUR);
      ok(await withCookie(value, 'GET', '/v1/account'));
      clock.advance(SESSION_IDLE_MS + 1);
      expectError(await withCookie(value, 'GET', '/v1/account'), 401, 'session_expired');

      const kept = await session();
      for (let used = 0; used < SESSION_ABSOLUTE_MS - 6 * HOUR; used += 6 * HOUR) {
        clock.advance(6 * HOUR);
        ok(await withCookie(kept, 'GET', '/v1/account'));
      }
      clock.advance(6 * HOUR);
      expectError(await withCookie(kept, 'GET', '/v1/account'), 401, 'session_expired');
      // The next sign-in sweeps ended sessions out of the store.
      await session();
      expect(await h.store.sessions.findLive(secretDigest(kept), '1970-01-01T00:00:00.000Z')).toBeUndefined();
      expect(await h.store.sessions.delete(secretDigest(kept))).toBe(false);
    });

    it('an unknown or malformed cookie is a 401, and never a way around the API key', async () => {
      expectError(await withCookie('A'.repeat(43), 'GET', '/v1/account'), 401, 'session_expired');
      expectError(await withCookie('not-a-session', 'GET', '/v1/account'), 401, 'missing_api_key');
    });

    it('the sign-in routes are not in the OpenAPI document (browser only)', async () => {
      const doc = ok<{ paths: Record<string, unknown> }>(await h.request('GET', '/v1/openapi.json'));
      expect(Object.keys(doc.paths)).not.toContain('/session');
      expect(Object.keys(doc.paths)).toContain('/usage');
    });

    it('no log line carries the API key or the session cookie', async () => {
      const value = await session();
      await withCookie(value, 'GET', '/v1/account');
      const text = h.logs.join('\n');
      expect(text).not.toContain(h.apiKey);
      expect(text).not.toContain(value);
    });
  });
}
