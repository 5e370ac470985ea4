import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretDigest } from '../../src/ids/formats.js';
import { PROXY_URL, startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import {
  Clock,
  ISO_MS,
  KEY_ID_RE,
  SANITIZED_RE,
  TOKEN_FIELDS,
  TOKEN_ID_RE,
  UNKNOWN_TOKEN_ID,
  createKey,
  createToken,
  expectError,
  newClient,
  ok,
  snapshot,
  type Client,
  type KeyJson,
  type ListJson,
  type TokenJson,
} from './helpers.js';

const SECOND = 1000;

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`tokens API (${fixture.name})`, () => {
    const clock = new Clock();
    let h: ApiHarness;

    beforeAll(async () => {
      h = await startApiHarness(fixture, { now: clock.now });
    });
    afterAll(async () => {
      await h.close();
    });

    describe('POST /v1/tokens', () => {
      it('creates a token: 201 with every field of the token object plus sanitized_key', async () => {
        const c = await newClient(h);
        const before = clock.now().toISOString();
        const res = await c.request('POST', '/v1/tokens', {
          body: {
            name: 'Checkout page',
            provider: 'openai',
            allowed_hosts: ['App.Example.com', 'localhost'],
            real_key: 'sk-proj-0123456789abcdefWXYZ',
            allowed_ips: ['10.0.0.0/8', '2001:db8::1'],
            rate_limit: { requests: 60, window: '1m' },
          },
        });
        const t = ok<TokenJson & { sanitized_key: string }>(res, 201);
        expect(Object.keys(t).sort()).toEqual([...TOKEN_FIELDS, 'sanitized_key'].sort());
        expect(t.sanitized_key).toMatch(SANITIZED_RE);
        expect(t.sanitized_key).toHaveLength(50);
        const body = t.sanitized_key.slice('svc_hb_'.length);
        expect(t.sanitized_key_hint).toBe(`svc_hb_${body.slice(0, 4)}\u2026${body.slice(-4)}`);
        expect(t.token_id).toMatch(TOKEN_ID_RE);
        expect(t.token_id).not.toBe(body);
        expect(t.sanitized_key).not.toContain(t.token_id);
        expect(body).not.toContain(t.token_id.slice(0, 8));
        expect(t.name).toBe('Checkout page');
        expect(t.target_provider).toBe('openai');
        expect(t.real_key_ref).toMatch(KEY_ID_RE);
        expect(t.authorized_origins).toEqual(['app.example.com', 'localhost']);
        expect(t.authorized_ips).toEqual(['10.0.0.0/8', '2001:db8::1']);
        expect(t.rate_limit).toEqual({ requests: 60, window: '1m' });
        expect(t.status).toBe('active');
        expect(t.created_at).toMatch(ISO_MS);
        expect(t.created_at >= before).toBe(true);
        expect(t.last_used_at).toBeNull();
        expect(t.expires_at).toBeNull();
        expect(t.revoked_at).toBeNull();
        expect(t.request_count).toBe(0);
        expect(t.proxy_base_url).toBe(`${PROXY_URL}/openai`);

        // The store keeps the digest of the sanitized token, which finds this token.
        const found = await h.store.tokens.findByDigest(secretDigest(t.sanitized_key));
        expect(found?.token.id).toBe(t.token_id);

        // real_key_ref is a key resource of its own, visible through /v1/keys.
        const key = ok<KeyJson>(await c.request('GET', `/v1/keys/${t.real_key_ref}`));
        expect(key.key_id).toBe(t.real_key_ref);
        expect(key.provider).toBe('openai');
        expect(key.hint).toBe('WXYZ');
        expect(key.token_count).toBe(1);
        expect(key.deleted_at).toBeNull();
      });

      it('fills defaults for optional fields', async () => {
        const c = await newClient(h);
        const t = await createToken(c);
        expect(t.authorized_ips).toEqual([]);
        expect(t.rate_limit).toBeNull();
        expect(t.expires_at).toBeNull();
      });

      it('never hands out the same sanitized key or token id twice', async () => {
        const c = await newClient(h);
        const made = await Promise.all([1, 2, 3, 4, 5].map(() => createToken(c)));
        expect(new Set(made.map((t) => t.sanitized_key)).size).toBe(5);
        expect(new Set(made.map((t) => t.token_id)).size).toBe(5);
        // Each real_key gets a key of its own.
        expect(new Set(made.map((t) => t.real_key_ref)).size).toBe(5);
      });

      it('creates a token on an existing key with key_id', async () => {
        const c = await newClient(h);
        const key = await createKey(c, { provider: 'anthropic', real_key: 'sk-ant-0123456789abcdefABCD' });
        const res = await c.request('POST', '/v1/tokens', {
          body: { name: 'claude', provider: 'anthropic', allowed_hosts: ['localhost'], key_id: key.key_id },
        });
        const t = ok<TokenJson>(res, 201);
        expect(t.real_key_ref).toBe(key.key_id);
        expect(t.target_provider).toBe('anthropic');
        expect(t.proxy_base_url).toBe(`${PROXY_URL}/anthropic`);
        const second = await createToken(c, {
          provider: 'anthropic',
          real_key: undefined,
          key_id: key.key_id,
        });
        expect(second.real_key_ref).toBe(key.key_id);
        expect(ok<KeyJson>(await c.request('GET', `/v1/keys/${key.key_id}`)).token_count).toBe(2);
        // No extra key was created.
        expect(ok<ListJson<KeyJson>>(await c.request('GET', '/v1/keys')).data).toHaveLength(1);
      });

      it('accepts expires_at in the future and normalises it to UTC with milliseconds', async () => {
        const c = await newClient(h);
        const t = await createToken(c, { expires_at: '2099-01-02T03:04:05+02:00' });
        expect(t.expires_at).toBe('2099-01-02T01:04:05.000Z');
        expect(t.status).toBe('active');
        const n = await createToken(c, { expires_at: null });
        expect(n.expires_at).toBeNull();
      });
    });

    describe('GET /v1/tokens', () => {
      let c: Client;
      let made: TokenJson[];

      beforeAll(async () => {
        c = await newClient(h, 'unlimited', 'lister');
        made = [];
        for (let i = 0; i < 5; i++) {
          made.push(await createToken(c, { name: `t${i}` }));
          clock.advance(5);
        }
      });

      it('lists newest first in the list shape, without sanitized_key', async () => {
        const res = await c.request('GET', '/v1/tokens');
        const list = ok<ListJson<TokenJson>>(res);
        expect(Object.keys(list).sort()).toEqual(['data', 'has_more', 'next_cursor', 'object']);
        expect(list.object).toBe('list');
        expect(list.has_more).toBe(false);
        expect(list.next_cursor).toBeNull();
        expect(list.data.map((t) => t.name)).toEqual(['t4', 't3', 't2', 't1', 't0']);
        for (const t of list.data) expect(Object.keys(t).sort()).toEqual(TOKEN_FIELDS);
        expect(res.text).not.toContain('sanitized_key"');
        for (const t of made)
          expect(res.text).not.toContain((t as TokenJson & { sanitized_key: string }).sanitized_key);
      });

      it('pages with limit=2 across 5 tokens: no duplicates, no gaps', async () => {
        const seen: string[] = [];
        let cursor: string | null = null;
        const pages: ListJson<TokenJson>[] = [];
        do {
          const url: string =
            cursor === null
              ? '/v1/tokens?limit=2'
              : `/v1/tokens?limit=2&cursor=${encodeURIComponent(cursor)}`;
          const page: ListJson<TokenJson> = ok<ListJson<TokenJson>>(await c.request('GET', url));
          pages.push(page);
          seen.push(...page.data.map((t) => t.token_id));
          cursor = page.next_cursor;
          expect(page.has_more).toBe(cursor !== null);
        } while (cursor !== null && pages.length < 10);
        expect(pages.map((p) => p.data.length)).toEqual([2, 2, 1]);
        expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
        expect(seen).toEqual([...made].reverse().map((t) => t.token_id));
      });

      it('has has_more false and no cursor when the page ends exactly at the last item', async () => {
        const page = ok<ListJson<TokenJson>>(await c.request('GET', '/v1/tokens?limit=5'));
        expect(page.data).toHaveLength(5);
        expect(page.has_more).toBe(false);
        expect(page.next_cursor).toBeNull();
        const one = ok<ListJson<TokenJson>>(await c.request('GET', '/v1/tokens?limit=1'));
        expect(one.data).toHaveLength(1);
        expect(one.has_more).toBe(true);
        expect(ok<ListJson<TokenJson>>(await c.request('GET', '/v1/tokens?limit=100')).data).toHaveLength(5);
      });

      it('keeps pages stable when a token is created between pages', async () => {
        const other = await newClient(h, 'unlimited', 'stable');
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) {
          ids.push((await createToken(other)).token_id);
          clock.advance(5);
        }
        const first = ok<ListJson<TokenJson>>(await other.request('GET', '/v1/tokens?limit=2'));
        await createToken(other);
        const cursor = first.next_cursor ?? '';
        const second = ok<ListJson<TokenJson>>(
          await other.request('GET', `/v1/tokens?limit=2&cursor=${encodeURIComponent(cursor)}`),
        );
        expect([...first.data, ...second.data].map((t) => t.token_id)).toEqual([...ids].reverse());
      });

      it('filters by ?status=', async () => {
        const f = await newClient(h, 'unlimited', 'filter');
        const a = await createToken(f, { name: 'active' });
        const r = await createToken(f, { name: 'revoked' });
        const e = await createToken(f, {
          name: 'expiring',
          expires_at: new Date(clock.now().getTime() + 60 * SECOND).toISOString(),
        });
        ok(await f.request('DELETE', `/v1/tokens/${r.token_id}`));
        clock.advance(61 * SECOND);
        const names = async (query: string) =>
          ok<ListJson<TokenJson>>(await f.request('GET', `/v1/tokens${query}`)).data.map(
            (t) => `${t.name}:${t.status}`,
          );
        expect(await names('?status=active')).toEqual(['active:active']);
        expect(await names('?status=revoked')).toEqual(['revoked:revoked']);
        expect(await names('?status=expired')).toEqual(['expiring:expired']);
        expect((await names('')).sort()).toEqual(['active:active', 'expiring:expired', 'revoked:revoked']);
        // Filter and pagination together.
        const page = ok<ListJson<TokenJson>>(await f.request('GET', '/v1/tokens?status=active&limit=1'));
        expect(page.data.map((t) => t.token_id)).toEqual([a.token_id]);
        expect(page.has_more).toBe(false);
        expect(e.status).toBe('active');
        expectError(await f.request('GET', '/v1/tokens?status=bogus'), 400, 'invalid_parameter', 'status');
      });

      it.each(['0', '101', 'abc', '-1', '1.5', '', '1e2', '1000'])(
        'refuses limit=%s with 400 invalid_parameter param limit',
        async (limit) => {
          const error = expectError(
            await c.request('GET', `/v1/tokens?limit=${limit}`),
            400,
            'invalid_parameter',
            'limit',
          );
          expect(error.message).toContain('limit');
        },
      );

      it.each([
        ['garbage', 'not a cursor'],
        ['punctuation', '!!!'],
        ['base64 of text', Buffer.from('hello world').toString('base64url')],
        ['base64 with a bad date', Buffer.from('2026-13-45|abc').toString('base64url')],
        ['base64 of a bad id', Buffer.from('2026-01-01T00:00:00.000Z|a b').toString('base64url')],
        ['very long', 'A'.repeat(5000)],
      ])('refuses a bad cursor (%s) with 400 invalid_cursor', async (_label, cursor) => {
        const res = await c.request('GET', `/v1/tokens?cursor=${encodeURIComponent(cursor)}`);
        expectError(res, 400, 'invalid_cursor', 'cursor');
      });

      it('refuses an unknown query parameter', async () => {
        expectError(await c.request('GET', '/v1/tokens?colour=blue'), 400, 'unknown_parameter', 'colour');
      });
    });

    describe('GET and DELETE /v1/tokens/:id', () => {
      it('gets a token without its sanitized key', async () => {
        const c = await newClient(h);
        const created = await createToken(c);
        const res = await c.request('GET', `/v1/tokens/${created.token_id}`);
        const t = ok<TokenJson>(res);
        expect(Object.keys(t).sort()).toEqual(TOKEN_FIELDS);
        const { sanitized_key: sanitizedKey, ...rest } = created;
        expect(t).toEqual(rest);
        expect(res.text).not.toContain(sanitizedKey);
      });

      it('revokes with DELETE: 200, status revoked; a second DELETE is idempotent with the same revoked_at', async () => {
        const c = await newClient(h);
        const created = await createToken(c);
        const first = await c.request('DELETE', `/v1/tokens/${created.token_id}`);
        const r1 = ok<TokenJson>(first);
        expect(Object.keys(r1).sort()).toEqual(TOKEN_FIELDS);
        expect(r1.status).toBe('revoked');
        expect(r1.revoked_at).toMatch(ISO_MS);
        expect(first.text).not.toContain(created.sanitized_key);
        clock.advance(2 * SECOND);
        const r2 = ok<TokenJson>(await c.request('DELETE', `/v1/tokens/${created.token_id}`));
        expect(r2.status).toBe('revoked');
        expect(r2.revoked_at).toBe(r1.revoked_at);
        expect(r2).toEqual(r1);
        const got = ok<TokenJson>(await c.request('GET', `/v1/tokens/${created.token_id}`));
        expect(got.status).toBe('revoked');
        expect(got.revoked_at).toBe(r1.revoked_at);
        const stored = await h.store.tokens.findByDigest(secretDigest(created.sanitized_key));
        expect(stored?.token.status).toBe('revoked');
      });

      it("answers 404 token_not_found for an unknown id, a malformed id and another account's token", async () => {
        const c = await newClient(h);
        const stranger = await newClient(h, 'unlimited', 'stranger');
        const theirs = await createToken(stranger);
        const before = await snapshot(h, stranger.accountId);
        for (const id of [
          UNKNOWN_TOKEN_ID,
          theirs.token_id,
          'abc',
          'svc_hb_x',
          theirs.sanitized_key,
          '%20',
          'key_x',
        ]) {
          for (const method of ['GET', 'DELETE']) {
            const res = await c.request(method, `/v1/tokens/${encodeURIComponent(id)}`);
            const error = expectError(res, 404, 'token_not_found');
            expect(error.type).toBe('not_found');
          }
        }
        expect(await snapshot(h, stranger.accountId)).toEqual(before);
        expect(ok<TokenJson>(await stranger.request('GET', `/v1/tokens/${theirs.token_id}`)).status).toBe(
          'active',
        );
      });
    });

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
