import { beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import {
  SECOND,
  Clock,
  TOKEN_FIELDS,
  UNKNOWN_TOKEN_ID,
  createToken,
  expectError,
  newClient,
  ok,
  type Client,
  type ListJson,
  type TokenJson,
} from './helpers.js';
import { useApiHarness } from './use-api-harness.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`tokens API (${fixture.name})`, () => {
    const clock = new Clock();
    const h = useApiHarness(fixture, { now: clock.now });

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

      it('an ended token stays ended: its expiry cannot change, its other fields can', async () => {
        const f = await newClient(h, 'unlimited', 'ended');
        const later = () => new Date(clock.now().getTime() + 3600 * SECOND).toISOString();
        const e = await createToken(f, {
          name: 'expiring',
          expires_at: new Date(clock.now().getTime() + 60 * SECOND).toISOString(),
        });
        const r = await createToken(f, { name: 'revoked' });
        ok(await f.request('DELETE', `/v1/tokens/${r.token_id}`));
        // Before its expiry, the expiry moves.
        const moved = ok<TokenJson>(
          await f.request('PATCH', `/v1/tokens/${e.token_id}`, { body: { expires_at: later() } }),
        );
        expect(moved.status).toBe('active');
        clock.advance(3601 * SECOND);
        // Past it (the expiry sweep has not run: no event yet), neither a later time nor null revives it.
        for (const expiresAt of [later(), null]) {
          const error = expectError(
            await f.request('PATCH', `/v1/tokens/${e.token_id}`, { body: { expires_at: expiresAt } }),
            409,
            'token_not_active',
            'expires_at',
          );
          expect(error.message).toContain('Create a new token');
        }
        expectError(
          await f.request('PATCH', `/v1/tokens/${r.token_id}`, { body: { expires_at: later() } }),
          409,
          'token_not_active',
        );
        const renamed = ok<TokenJson>(
          await f.request('PATCH', `/v1/tokens/${e.token_id}`, { body: { name: 'renamed' } }),
        );
        expect([renamed.name, renamed.status, renamed.expires_at]).toEqual([
          'renamed',
          'expired',
          moved.expires_at,
        ]);
        expectError(
          await f.request('PATCH', `/v1/tokens/${UNKNOWN_TOKEN_ID}`, { body: { expires_at: later() } }),
          404,
          'token_not_found',
        );
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
        [
          'an instant of the right shape that does not exist',
          Buffer.from('9999-99-99T00:00:00.000Z|x').toString('base64url'),
        ],
        ['a day February lacks', Buffer.from('2026-02-30T00:00:00.000Z|x').toString('base64url')],
        ['very long', 'A'.repeat(5000)],
      ])('refuses a bad cursor (%s) with 400 invalid_cursor', async (_label, cursor) => {
        const res = await c.request('GET', `/v1/tokens?cursor=${encodeURIComponent(cursor)}`);
        expectError(res, 400, 'invalid_cursor', 'cursor');
      });

      it('refuses an unknown query parameter', async () => {
        expectError(await c.request('GET', '/v1/tokens?colour=blue'), 400, 'unknown_parameter', 'colour');
      });
    });
  });
}
