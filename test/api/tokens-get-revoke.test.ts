import { describe, expect, it } from 'vitest';
import { secretDigest } from '../../src/ids/formats.js';
import { databases } from '../support/databases.js';
import {
  SECOND,
  Clock,
  ISO_MS,
  TOKEN_FIELDS,
  UNKNOWN_TOKEN_ID,
  createToken,
  expectError,
  newClient,
  ok,
  snapshot,
  type TokenJson,
} from './helpers.js';
import { useApiHarness } from './use-api-harness.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`tokens API (${fixture.name})`, () => {
    const clock = new Clock();
    const h = useApiHarness(fixture, { now: clock.now });

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
  });
}
