import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IDEMPOTENCY_TTL_MS,
  fingerprintText,
  replayBinding,
  requestFingerprint,
} from '../../src/api/idempotency.js';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import {
  Clock,
  SANITIZED_RE,
  createKey,
  expectError,
  newClient,
  ok,
  snapshot,
  tokenBody,
  type CreatedTokenJson,
  type KeyJson,
} from './helpers.js';

let counter = 0;
const freshKey = () => `idem-${Date.now()}-${++counter}`;

describe('fingerprintText', () => {
  it.each([
    [
      'no query: the text of earlier versions',
      'DELETE',
      '/v1/webhooks/wh_1',
      undefined,
      'DELETE /v1/webhooks/wh_1\nundefined',
    ],
    [
      'a query, sorted',
      'POST',
      '/v1/e/1/redeliver?b=2&a=1',
      {},
      'POST /v1/e/1/redeliver?[["a","1"],["b","2"]]\n{}',
    ],
    ['an empty query is none', 'POST', '/v1/tokens?', { b: 1, a: 2 }, 'POST /v1/tokens\n{"a":2,"b":1}'],
  ])('%s', (_name, method, url, body, text) => {
    expect(fingerprintText(method, url, body)).toBe(text);
  });

  it('tells apart what differs in the query, not its order', () => {
    const text = (url: string) => fingerprintText('POST', url, {});
    expect(text('/v1/x?webhook_id=wh_1')).not.toBe(text('/v1/x?webhook_id=wh_2'));
    expect(text('/v1/x?a=1&b=2')).toBe(text('/v1/x?b=2&a=1'));
    expect(text('/v1/x?a=1')).not.toBe(text('/v1/x'));
  });
});

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`Idempotency-Key (${fixture.name})`, () => {
    const clock = new Clock();
    let h: ApiHarness;

    beforeAll(async () => {
      h = await startApiHarness(fixture, { now: clock.now });
    });
    afterAll(async () => {
      await h.close();
    });

    it('a repeated POST /v1/tokens returns the first answer, sanitized_key included, and creates one token', async () => {
      const c = await newClient(h);
      const key = freshKey();
      const first = await c.request('POST', '/v1/tokens', {
        body: tokenBody(),
        headers: { 'idempotency-key': key },
      });
      const created = ok<CreatedTokenJson>(first, 201);
      expect(created.sanitized_key).toMatch(SANITIZED_RE);
      expect(first.headers['idempotent-replayed']).toBeUndefined();

      // Same body with its fields in another order: the same request.
      const reordered = Object.fromEntries(Object.entries(tokenBody()).reverse());
      const again = await c.request('POST', '/v1/tokens', {
        body: reordered,
        headers: { 'idempotency-key': key },
      });
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.headers['content-type']).toMatch(/^application\/json/);
      expect(again.body).toEqual(created);
      expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);

      const after = await snapshot(h, c.accountId);
      expect(after.tokens).toHaveLength(1);
      expect(after.keys).toHaveLength(1);
    });

    it('stores the replay body sealed: no sanitized token in the clear in the database', async () => {
      const c = await newClient(h);
      const key = freshKey();
      const created = ok<CreatedTokenJson>(
        await c.request('POST', '/v1/tokens', { body: tokenBody(), headers: { 'idempotency-key': key } }),
        201,
      );
      const now = clock.now();
      const stored = await h.store.idempotency.begin({
        accountId: c.accountId,
        key,
        fingerprint: await requestFingerprint(h.vault, 'POST', '/v1/tokens', tokenBody()),
        now: now.toISOString(),
        expiresAt: new Date(now.getTime() + 1000).toISOString(),
        staleBefore: new Date(now.getTime() - 60_000).toISOString(),
      });
      expect(stored.state).toBe('completed');
      if (stored.state !== 'completed') return;
      expect(stored.status).toBe(201);
      expect(stored.body.includes(created.sanitized_key)).toBe(false);
      expect(stored.body.includes('svc_hb_')).toBe(false);
      expect(stored.body.includes(created.token_id)).toBe(false);
      const opened = await h.vault.decrypt(stored.body, replayBinding(c.accountId, key));
      expect(JSON.parse(opened.toString('utf8'))).toEqual(created);
      // The envelope is bound to its account and key: moved to another, it does not open.
      await expect(h.vault.decrypt(stored.body, replayBinding(c.accountId, `${key}x`))).rejects.toThrow();
    });

    it('the same key with another body or another path is 409 idempotency_conflict, and does nothing', async () => {
      const c = await newClient(h);
      const key = freshKey();
      ok(
        await c.request('POST', '/v1/tokens', { body: tokenBody(), headers: { 'idempotency-key': key } }),
        201,
      );
      const before = await snapshot(h, c.accountId);
      const other = await c.request('POST', '/v1/tokens', {
        body: tokenBody({ name: 'another' }),
        headers: { 'idempotency-key': key },
      });
      expectError(other, 409, 'idempotency_conflict', 'Idempotency-Key');
      const path = await c.request('POST', '/v1/keys', {
        body: { name: 'k', provider: 'openai', real_key: 'sk-key-0123456789abcdefWXYZ' },
        headers: { 'idempotency-key': key },
      });
      expectError(path, 409, 'idempotency_conflict');
      expect(await snapshot(h, c.accountId)).toEqual(before);
    });

    it('keys are per account: another account with the same key gets its own answer', async () => {
      const a = await newClient(h);
      const b = await newClient(h);
      const key = freshKey();
      const ta = ok<CreatedTokenJson>(
        await a.request('POST', '/v1/tokens', { body: tokenBody(), headers: { 'idempotency-key': key } }),
        201,
      );
      const tb = ok<CreatedTokenJson>(
        await b.request('POST', '/v1/tokens', { body: tokenBody(), headers: { 'idempotency-key': key } }),
        201,
      );
      expect(tb.token_id).not.toBe(ta.token_id);
    });

    it('a key whose first request is still in flight is 409 idempotency_in_progress with Retry-After', async () => {
      const c = await newClient(h);
      const key = freshKey();
      const body = tokenBody();
      const now = clock.now();
      // Claim the key exactly as an unfinished first request would have.
      const claim = await h.store.idempotency.begin({
        accountId: c.accountId,
        key,
        fingerprint: await requestFingerprint(h.vault, 'POST', '/v1/tokens', body),
        now: now.toISOString(),
        expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString(),
        staleBefore: new Date(now.getTime() - 60_000).toISOString(),
      });
      expect(claim.state).toBe('started');
      const res = await c.request('POST', '/v1/tokens', { body, headers: { 'idempotency-key': key } });
      expectError(res, 409, 'idempotency_in_progress');
      expect(res.headers['retry-after']).toBe('1');
      expect((await snapshot(h, c.accountId)).tokens).toHaveLength(0);

      // A claim left behind by a process that died is taken over after a minute.
      clock.advance(61_000);
      ok(await c.request('POST', '/v1/tokens', { body, headers: { 'idempotency-key': key } }), 201);
      expect((await snapshot(h, c.accountId)).tokens).toHaveLength(1);
    });

    it('a key holds for 24 hours, then does the work again', async () => {
      const c = await newClient(h);
      const key = freshKey();
      const first = ok<CreatedTokenJson>(
        await c.request('POST', '/v1/tokens', { body: tokenBody(), headers: { 'idempotency-key': key } }),
        201,
      );
      clock.advance(IDEMPOTENCY_TTL_MS - 60_000);
      const replay = ok<CreatedTokenJson>(
        await c.request('POST', '/v1/tokens', { body: tokenBody(), headers: { 'idempotency-key': key } }),
        201,
      );
      expect(replay.token_id).toBe(first.token_id);
      clock.advance(120_000);
      const fresh = ok<CreatedTokenJson>(
        await c.request('POST', '/v1/tokens', { body: tokenBody(), headers: { 'idempotency-key': key } }),
        201,
      );
      expect(fresh.token_id).not.toBe(first.token_id);
      expect(
        await h.store.idempotency.purgeExpired(
          new Date(clock.now().getTime() + IDEMPOTENCY_TTL_MS + 1).toISOString(),
        ),
      ).toBeGreaterThan(0);
    });

    it('errors after validation are replayed too; requests failing validation claim nothing', async () => {
      const c = await newClient(h, 'free');
      const key = freshKey();
      const bad = await c.request('POST', '/v1/tokens', {
        body: { ...tokenBody(), allowedHosts: ['x'] },
        headers: { 'idempotency-key': key },
      });
      expectError(bad, 400, 'unknown_parameter');
      // The key is still free: the corrected request does the work.
      ok(
        await c.request('POST', '/v1/tokens', { body: tokenBody(), headers: { 'idempotency-key': key } }),
        201,
      );

      for (let i = 0; i < 2; i++) ok(await c.request('POST', '/v1/tokens', { body: tokenBody() }), 201);
      const limitKey = freshKey();
      const refused = await c.request('POST', '/v1/tokens', {
        body: tokenBody(),
        headers: { 'idempotency-key': limitKey },
      });
      expectError(refused, 403, 'plan_limit_exceeded');
      const replayed = await c.request('POST', '/v1/tokens', {
        body: tokenBody(),
        headers: { 'idempotency-key': limitKey },
      });
      expect(replayed.status).toBe(403);
      expect(replayed.headers['idempotent-replayed']).toBe('true');
      expect(replayed.body).toEqual(refused.body);
    });

    it('works on POST /v1/keys and POST /v1/keys/:id/rotate', async () => {
      const c = await newClient(h);
      const key = freshKey();
      const body = { name: 'k', provider: 'openai', real_key: 'sk-key-0123456789abcdefWXYZ' };
      const first = ok<KeyJson>(
        await c.request('POST', '/v1/keys', { body, headers: { 'idempotency-key': key } }),
        201,
      );
      const again = ok<KeyJson>(
        await c.request('POST', '/v1/keys', { body, headers: { 'idempotency-key': key } }),
        201,
      );
      expect(again).toEqual(first);
      expect((await snapshot(h, c.accountId)).keys).toHaveLength(1);

      const other = await createKey(c);
      const rotateKey = freshKey();
      const rotate = (id: string) =>
        c.request('POST', `/v1/keys/${id}/rotate`, {
          body: { real_key: 'sk-new-0123456789abcdefABCD' },
          headers: { 'idempotency-key': rotateKey },
        });
      const rotated = ok<KeyJson>(await rotate(first.key_id), 200);
      expect((await rotate(first.key_id)).body).toEqual(rotated);
      // Same key and body, another key id in the path: another request.
      expectError(await rotate(other.key_id), 409, 'idempotency_conflict');
    });

    it('without the header nothing changes: two POSTs make two tokens', async () => {
      const c = await newClient(h);
      ok(await c.request('POST', '/v1/tokens', { body: tokenBody() }), 201);
      ok(await c.request('POST', '/v1/tokens', { body: tokenBody() }), 201);
      expect((await snapshot(h, c.accountId)).tokens).toHaveLength(2);
    });

    it('a repeated DELETE with its key answers as the first did, where a second delete would be 404', async () => {
      const c = await newClient(h, 'unlimited');
      const del = (path: string, key?: string) =>
        c.request('DELETE', path, key === undefined ? {} : { headers: { 'idempotency-key': key } });
      const apiKey = ok<{ id: string }>(
        await c.request('POST', '/v1/api_keys', { body: { name: 'ci' } }),
        201,
      );
      const webhook = ok<{ webhook_id: string }>(
        await c.request('POST', '/v1/webhooks', {
          body: { url: 'https://hooks.example.com/in', events: ['*'] },
        }),
        201,
      );
      for (const path of [`/v1/api_keys/${apiKey.id}`, `/v1/webhooks/${webhook.webhook_id}`]) {
        const key = freshKey();
        const first = await del(path, key);
        expect(first.status, path).toBeLessThan(300);
        const again = await del(path, key);
        expect(again.status, path).toBe(first.status);
        expect(again.headers['idempotent-replayed'], path).toBe('true');
        expect(again.body, path).toEqual(first.body);
        // Without the key (or with a new one) the object is gone, as before.
        expect((await del(path)).status, path).toBe(404);
        expect((await del(path, freshKey())).status, path).toBe(404);
      }
    });

    it('the query is part of the request: the same key for another webhook_id is a conflict', async () => {
      const c = await newClient(h, 'unlimited');
      const hook = async () =>
        ok<{ webhook_id: string }>(
          await c.request('POST', '/v1/webhooks', {
            body: { url: 'https://hooks.example.com/in', events: ['*'] },
          }),
          201,
        ).webhook_id;
      const [w1, w2] = [await hook(), await hook()];
      const ping = ok<{ event_id: string }>(await c.request('POST', `/v1/webhooks/${w1}/test`), 202);
      const key = freshKey();
      const redeliver = (webhookId: string) =>
        c.request('POST', `/v1/events/${ping.event_id}/redeliver?webhook_id=${webhookId}`, {
          headers: { 'idempotency-key': key },
        });
      const first = ok<{ deliveries: { webhook_id: string }[] }>(await redeliver(w1), 202);
      expect(first.deliveries.map((d) => d.webhook_id)).toEqual([w1]);
      expectError(await redeliver(w2), 409, 'idempotency_conflict', 'Idempotency-Key');
      const replay = await redeliver(w1);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(first);
    });

    it('refuses a malformed key with 400 invalid_parameter', async () => {
      const c = await newClient(h);
      for (const bad of ['', 'a'.repeat(256), 'has space']) {
        const res = await c.request('POST', '/v1/tokens', {
          body: tokenBody(),
          headers: { 'idempotency-key': bad },
        });
        expectError(res, 400, 'invalid_parameter', 'Idempotency-Key');
      }
      expect((await snapshot(h, c.accountId)).tokens).toHaveLength(0);
    });
  });
}
