import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretDigest } from '../../src/ids/formats.js';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import {
  SECOND,
  Clock,
  ISO_MS,
  KEY_FIELDS,
  KEY_ID_RE,
  UNKNOWN_KEY_ID,
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

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`keys API (${fixture.name})`, () => {
    const clock = new Clock();
    let h: ApiHarness;

    beforeAll(async () => {
      h = await startApiHarness(fixture, { now: clock.now });
    });
    afterAll(async () => {
      await h.close();
    });

    /** The real key a token's store record decrypts to, or null when its ciphertext is gone. */
    async function realKeyOf(c: Client, sanitizedKey: string): Promise<string | null> {
      const found = await h.store.tokens.findByDigest(secretDigest(sanitizedKey));
      expect(found).toBeDefined();
      if (found === undefined || found.ciphertext === null) return null;
      const plaintext = await h.vault.decrypt(found.ciphertext, {
        keyId: found.token.keyId,
        accountId: c.accountId,
      });
      try {
        return plaintext.toString('utf8');
      } finally {
        plaintext.fill(0);
      }
    }

    describe('POST /v1/keys', () => {
      it('creates a key: 201 with exactly the key object fields, never the key', async () => {
        const c = await newClient(h);
        const realKey = 'sk-live-0123456789abcdefQRST';
        const res = await c.request('POST', '/v1/keys', {
          body: { name: 'prod', provider: 'openai', real_key: realKey },
        });
        const key = ok<KeyJson>(res, 201);
        expect(Object.keys(key).sort()).toEqual(KEY_FIELDS);
        expect(key.key_id).toMatch(KEY_ID_RE);
        expect(key.name).toBe('prod');
        expect(key.provider).toBe('openai');
        expect(key.hint).toBe('QRST');
        expect(key.created_at).toMatch(ISO_MS);
        expect(key.rotated_at).toBeNull();
        expect(key.deleted_at).toBeNull();
        expect(key.token_count).toBe(0);
        expect(res.text).not.toContain(realKey);
        expect(res.text).not.toContain('0123456789abcdef');
      });

      it('gives short keys an empty hint rather than a large share of the key', async () => {
        const c = await newClient(h);
        const key = await createKey(c, { real_key: 'short-key' });
        expect(key.hint).toBe('');
      });

      it('refuses an unknown provider and changes nothing', async () => {
        const c = await newClient(h);
        const before = await snapshot(h, c.accountId);
        const res = await c.request('POST', '/v1/keys', {
          body: { name: 'x', provider: 'nope', real_key: 'sk-0123456789abcdef' },
        });
        const error = expectError(res, 400, 'unknown_provider', 'provider');
        expect(error.message).toContain('openai');
        expect(await snapshot(h, c.accountId)).toEqual(before);
      });

      it.each([
        [{ provider: 'openai', real_key: 'sk-0123456789abcdef' }, 'missing_parameter', 'name'],
        [{ name: 'x', real_key: 'sk-0123456789abcdef' }, 'missing_parameter', 'provider'],
        [{ name: 'x', provider: 'openai' }, 'missing_parameter', 'real_key'],
        [{ name: 'x', provider: 'openai', real_key: '' }, 'invalid_parameter', 'real_key'],
        [{ name: 'x', provider: 'openai', real_key: 'sk with space' }, 'invalid_parameter', 'real_key'],
        [
          { name: 'x', provider: 'openai', real_key: 'sk-0123456789abcdef', key_id: 'key_x' },
          'unknown_parameter',
          'key_id',
        ],
      ])('refuses bad bodies (%j → %s %s)', async (body, code, param) => {
        const c = await newClient(h);
        const before = await snapshot(h, c.accountId);
        expectError(await c.request('POST', '/v1/keys', { body }), 400, code, param);
        expect(await snapshot(h, c.accountId)).toEqual(before);
      });
    });

    describe('GET /v1/keys', () => {
      it('lists newest first and pages with a cursor', async () => {
        const c = await newClient(h);
        const made: KeyJson[] = [];
        for (let i = 0; i < 5; i++) {
          made.push(await createKey(c, { name: `k${i}` }));
          clock.advance(5);
        }
        const all = ok<ListJson<KeyJson>>(await c.request('GET', '/v1/keys'));
        expect(all.object).toBe('list');
        expect(all.data.map((k) => k.name)).toEqual(['k4', 'k3', 'k2', 'k1', 'k0']);
        for (const k of all.data) expect(Object.keys(k).sort()).toEqual(KEY_FIELDS);
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const url: string =
            cursor === null ? '/v1/keys?limit=2' : `/v1/keys?limit=2&cursor=${encodeURIComponent(cursor)}`;
          const page: ListJson<KeyJson> = ok<ListJson<KeyJson>>(await c.request('GET', url));
          seen.push(...page.data.map((k) => k.key_id));
          cursor = page.next_cursor;
          expect(page.has_more).toBe(cursor !== null);
          pages++;
        } while (cursor !== null && pages < 10);
        expect(pages).toBe(3);
        expect(seen).toEqual([...made].reverse().map((k) => k.key_id));
        expectError(await c.request('GET', '/v1/keys?limit=0'), 400, 'invalid_parameter', 'limit');
        expectError(await c.request('GET', '/v1/keys?limit=101'), 400, 'invalid_parameter', 'limit');
        expectError(await c.request('GET', '/v1/keys?cursor=nope!'), 400, 'invalid_cursor', 'cursor');
      });

      it("gets one key, and 404 key_not_found for unknown, malformed and other accounts' ids", async () => {
        const c = await newClient(h);
        const key = await createKey(c);
        expect(ok<KeyJson>(await c.request('GET', `/v1/keys/${key.key_id}`))).toEqual(key);
        const stranger = await newClient(h);
        const theirs = await createKey(stranger);
        for (const id of [UNKNOWN_KEY_ID, theirs.key_id, 'nope', 'key_', '1'.repeat(43)]) {
          for (const [method, suffix, body] of [
            ['GET', '', undefined],
            ['DELETE', '', undefined],
            ['POST', '/rotate', { real_key: 'sk-rotated-0123456789ab' }],
          ] as const) {
            const res = await c.request(method, `/v1/keys/${encodeURIComponent(id)}${suffix}`, { body });
            expectError(res, 404, 'key_not_found');
          }
        }
        const still = ok<KeyJson>(await stranger.request('GET', `/v1/keys/${theirs.key_id}`));
        expect(still).toEqual(theirs);
      });
    });

    describe('POST /v1/keys/:id/rotate', () => {
      it('replaces the real key; tokens using it now carry the new ciphertext', async () => {
        const c = await newClient(h);
        const oldKey = 'sk-old-0123456789abcdefOOOO';
        const newKey = 'sk-new-0123456789abcdefNNNN';
        const key = await createKey(c, { real_key: oldKey });
        const t1 = await createToken(c, { real_key: undefined, key_id: key.key_id });
        const t2 = await createToken(c, { real_key: undefined, key_id: key.key_id });
        expect(await realKeyOf(c, t1.sanitized_key)).toBe(oldKey);
        clock.advance(SECOND);
        const res = await c.request('POST', `/v1/keys/${key.key_id}/rotate`, { body: { real_key: newKey } });
        const rotated = ok<KeyJson>(res);
        expect(Object.keys(rotated).sort()).toEqual(KEY_FIELDS);
        expect(rotated.key_id).toBe(key.key_id);
        expect(rotated.hint).toBe('NNNN');
        expect(rotated.rotated_at).toMatch(ISO_MS);
        expect((rotated.rotated_at ?? '') > rotated.created_at).toBe(true);
        expect(rotated.created_at).toBe(key.created_at);
        expect(rotated.deleted_at).toBeNull();
        expect(rotated.token_count).toBe(2);
        expect(res.text).not.toContain(newKey);
        expect(res.text).not.toContain(oldKey);
        expect(await realKeyOf(c, t1.sanitized_key)).toBe(newKey);
        expect(await realKeyOf(c, t2.sanitized_key)).toBe(newKey);
        // The tokens are untouched: same ids, still active, same key reference.
        for (const t of [t1, t2]) {
          const got = ok<TokenJson>(await c.request('GET', `/v1/tokens/${t.token_id}`));
          expect(got.status).toBe('active');
          expect(got.real_key_ref).toBe(key.key_id);
        }
        expect(ok<KeyJson>(await c.request('GET', `/v1/keys/${key.key_id}`))).toEqual(rotated);
      });

      it('rotates the key a token created with real_key got', async () => {
        const c = await newClient(h);
        const t = await createToken(c, { real_key: 'sk-inline-0123456789abcdefIIII' });
        ok(
          await c.request('POST', `/v1/keys/${t.real_key_ref}/rotate`, {
            body: { real_key: 'sk-inline-rotated-0123456789RRRR' },
          }),
        );
        expect(await realKeyOf(c, t.sanitized_key)).toBe('sk-inline-rotated-0123456789RRRR');
      });

      it('refuses bad rotation bodies and keeps the old key', async () => {
        const c = await newClient(h);
        const key = await createKey(c, { real_key: 'sk-keep-0123456789abcdefKEEP' });
        const t = await createToken(c, { real_key: undefined, key_id: key.key_id });
        for (const [body, code, param] of [
          [{}, 'missing_parameter', 'real_key'],
          [{ real_key: '' }, 'invalid_parameter', 'real_key'],
          [{ real_key: 'a\nb' }, 'invalid_parameter', 'real_key'],
          [{ real_key: 'x'.repeat(4097) }, 'invalid_parameter', 'real_key'],
          [{ real_key: 'sk-0123456789abcd', name: 'x' }, 'unknown_parameter', 'name'],
          [{ realKey: 'sk-0123456789abcd' }, 'unknown_parameter', 'realKey'],
        ] as const) {
          expectError(await c.request('POST', `/v1/keys/${key.key_id}/rotate`, { body }), 400, code, param);
        }
        expect(await realKeyOf(c, t.sanitized_key)).toBe('sk-keep-0123456789abcdefKEEP');
        expect(ok<KeyJson>(await c.request('GET', `/v1/keys/${key.key_id}`))).toEqual({
          ...key,
          token_count: 1,
        });
      });
    });

    describe('DELETE /v1/keys/:id', () => {
      it('destroys the ciphertext, sets deleted_at and revokes every token using the key; repeat is idempotent', async () => {
        const c = await newClient(h);
        const key = await createKey(c);
        const other = await createKey(c, { name: 'other' });
        const t1 = await createToken(c, { real_key: undefined, key_id: key.key_id });
        const t2 = await createToken(c, { real_key: undefined, key_id: key.key_id });
        const bystander = await createToken(c, { real_key: undefined, key_id: other.key_id });
        clock.advance(SECOND);
        const deleted = ok<KeyJson>(await c.request('DELETE', `/v1/keys/${key.key_id}`));
        expect(Object.keys(deleted).sort()).toEqual(KEY_FIELDS);
        expect(deleted.key_id).toBe(key.key_id);
        expect(deleted.deleted_at).toMatch(ISO_MS);
        expect(deleted.token_count).toBe(0);
        for (const t of [t1, t2]) {
          const got = ok<TokenJson>(await c.request('GET', `/v1/tokens/${t.token_id}`));
          expect(got.status).toBe('revoked');
          expect(got.revoked_at).toBe(deleted.deleted_at);
          const stored = await h.store.tokens.findByDigest(secretDigest(t.sanitized_key));
          expect(stored?.ciphertext).toBeNull();
          expect(stored?.token.status).toBe('revoked');
        }
        expect(ok<TokenJson>(await c.request('GET', `/v1/tokens/${bystander.token_id}`)).status).toBe(
          'active',
        );
        expect(await realKeyOf(c, bystander.sanitized_key)).toBe('sk-key-0123456789abcdefWXYZ');

        clock.advance(SECOND);
        const again = ok<KeyJson>(await c.request('DELETE', `/v1/keys/${key.key_id}`));
        expect(again).toEqual(deleted);
        expect(ok<KeyJson>(await c.request('GET', `/v1/keys/${key.key_id}`))).toEqual(deleted);
        // A token revoked by the deletion keeps its revoked_at.
        expect(ok<TokenJson>(await c.request('GET', `/v1/tokens/${t1.token_id}`)).revoked_at).toBe(
          deleted.deleted_at,
        );
        // Still listed, marked deleted.
        const listed = ok<ListJson<KeyJson>>(await c.request('GET', '/v1/keys')).data.find(
          (k) => k.key_id === key.key_id,
        );
        expect(listed?.deleted_at).toBe(deleted.deleted_at);
      });

      it("keeps an already revoked token's revoked_at when its key is deleted later", async () => {
        const c = await newClient(h);
        const t = await createToken(c);
        const revoked = ok<TokenJson>(await c.request('DELETE', `/v1/tokens/${t.token_id}`));
        clock.advance(SECOND);
        ok(await c.request('DELETE', `/v1/keys/${t.real_key_ref}`));
        expect(ok<TokenJson>(await c.request('GET', `/v1/tokens/${t.token_id}`)).revoked_at).toBe(
          revoked.revoked_at,
        );
      });

      it('refuses to rotate a deleted key (409 key_deleted) or to create a token on it', async () => {
        const c = await newClient(h);
        const key = await createKey(c);
        ok(await c.request('DELETE', `/v1/keys/${key.key_id}`));
        const before = await snapshot(h, c.accountId);
        const rotate = await c.request('POST', `/v1/keys/${key.key_id}/rotate`, {
          body: { real_key: 'sk-new-0123456789abcdef' },
        });
        const error = expectError(rotate, 409, 'key_deleted');
        expect(error.type).toBe('conflict');
        const create = await c.request('POST', '/v1/tokens', {
          body: { name: 'x', provider: 'openai', allowed_hosts: ['localhost'], key_id: key.key_id },
        });
        expectError(create, 409, 'key_deleted', 'key_id');
        expect(await snapshot(h, c.accountId)).toEqual(before);
        expect(ok<KeyJson>(await c.request('GET', `/v1/keys/${key.key_id}`)).rotated_at).toBeNull();
      });
    });

    describe('tokens on existing keys', () => {
      it("answers 404 key_not_found for another account's key_id and changes nothing", async () => {
        const c = await newClient(h);
        const stranger = await newClient(h);
        const theirs = await createKey(stranger);
        const before = await snapshot(h, c.accountId);
        for (const keyId of [theirs.key_id, UNKNOWN_KEY_ID]) {
          const res = await c.request('POST', '/v1/tokens', {
            body: { name: 'x', provider: 'openai', allowed_hosts: ['localhost'], key_id: keyId },
          });
          expectError(res, 404, 'key_not_found', 'key_id');
        }
        expect(await snapshot(h, c.accountId)).toEqual(before);
        expect(ok<KeyJson>(await stranger.request('GET', `/v1/keys/${theirs.key_id}`)).token_count).toBe(0);
      });

      it('refuses a malformed key_id with 400 naming key_id', async () => {
        const c = await newClient(h);
        const res = await c.request('POST', '/v1/tokens', {
          body: { name: 'x', provider: 'openai', allowed_hosts: ['localhost'], key_id: 'not-a-key-id' },
        });
        expectError(res, 400, 'invalid_parameter', 'key_id');
      });

      it('refuses a key of another provider with 400 provider_mismatch', async () => {
        const c = await newClient(h);
        const key = await createKey(c, { provider: 'anthropic' });
        const before = await snapshot(h, c.accountId);
        const res = await c.request('POST', '/v1/tokens', {
          body: { name: 'x', provider: 'openai', allowed_hosts: ['localhost'], key_id: key.key_id },
        });
        const error = expectError(res, 400, 'provider_mismatch');
        expect(error.message).toMatch(/provider/);
        expect(await snapshot(h, c.accountId)).toEqual(before);
      });

      it('counts only active tokens in token_count', async () => {
        const c = await newClient(h);
        const key = await createKey(c);
        const onKey = { real_key: undefined, key_id: key.key_id };
        const count = async () => ok<KeyJson>(await c.request('GET', `/v1/keys/${key.key_id}`)).token_count;
        expect(await count()).toBe(0);
        const a = await createToken(c, onKey);
        await createToken(c, onKey);
        await createToken(c, {
          ...onKey,
          expires_at: new Date(clock.now().getTime() + 10 * SECOND).toISOString(),
        });
        await createToken(c); // its own key
        expect(await count()).toBe(3);
        ok(await c.request('DELETE', `/v1/tokens/${a.token_id}`));
        expect(await count()).toBe(2);
        clock.advance(11 * SECOND);
        expect(await count()).toBe(1);
        const listed = ok<ListJson<KeyJson>>(await c.request('GET', '/v1/keys')).data.find(
          (k) => k.key_id === key.key_id,
        );
        expect(listed?.token_count).toBe(1);
      });
    });
  });
}
