import { describe, expect, it } from 'vitest';
import { secretDigest } from '../../src/ids/formats.js';
import { PROXY_URL } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import {
  Clock,
  ISO_MS,
  KEY_ID_RE,
  SANITIZED_RE,
  TOKEN_FIELDS,
  TOKEN_ID_RE,
  createKey,
  createToken,
  newClient,
  ok,
  type KeyJson,
  type ListJson,
  type TokenJson,
} from './helpers.js';
import { useApiHarness } from './use-api-harness.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`tokens API (${fixture.name})`, () => {
    const clock = new Clock();
    const h = useApiHarness(fixture, { now: clock.now });

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
  });
}
