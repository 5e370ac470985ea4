import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequestLogWriter } from '../../src/requestlog/batch-writer.js';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import { capture, record } from '../requestlog/helpers.js';
import {
  Clock,
  createToken,
  expectError,
  newClient,
  ok,
  UNKNOWN_TOKEN_ID,
  type Client,
  type ListJson,
  type TokenJson,
} from './helpers.js';

interface UsageJson {
  window: string;
  bucket: string;
  start: string;
  end: string;
  forwarded: number;
  refused: number;
  refused_by_reason: Record<string, number>;
  buckets: { start: string; forwarded: number; refused: number }[];
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`API the dashboard adds (${fixture.name})`, () => {
    const clock = new Clock();
    let h: ApiHarness;
    let c: Client;

    beforeAll(async () => {
      h = await startApiHarness(fixture, { now: clock.now });
      c = await newClient(h, 'unlimited', 'dash');
    });
    afterAll(async () => {
      await h.close();
    });

    describe('PATCH /v1/tokens/:id', () => {
      it('changes name, hosts, IPs, rate limit and expiry; null clears rate limit and expiry', async () => {
        const t = await createToken(c, { rate_limit: { requests: 5, window: '1m' } });
        const expires = new Date(clock.now().getTime() + 86_400_000).toISOString();
        const patched = ok<TokenJson>(
          await c.request('PATCH', `/v1/tokens/${t.token_id}`, {
            body: {
              name: 'renamed',
              allowed_hosts: ['*.example.org', 'https://app.example.org:8443'],
              allowed_ips: ['10.0.0.0/8'],
              rate_limit: { requests: 10, window: '1 hour' },
              expires_at: expires,
            },
          }),
        );
        expect(patched).toMatchObject({
          token_id: t.token_id,
          name: 'renamed',
          authorized_origins: ['*.example.org', 'https://app.example.org:8443'],
          authorized_ips: ['10.0.0.0/8'],
          rate_limit: { requests: 10, window: '1h' },
          expires_at: expires,
          sanitized_key_hint: t.sanitized_key_hint,
        });
        expect(patched).not.toHaveProperty('sanitized_key');
        const cleared = ok<TokenJson>(
          await c.request('PATCH', `/v1/tokens/${t.token_id}`, {
            body: { rate_limit: null, expires_at: null },
          }),
        );
        expect(cleared).toMatchObject({ name: 'renamed', rate_limit: null, expires_at: null });
        expect(ok<TokenJson>(await c.request('GET', `/v1/tokens/${t.token_id}`))).toEqual(cleared);
      });

      it('rejects bad values naming the field, and unknown fields', async () => {
        const t = await createToken(c);
        expectError(
          await c.request('PATCH', `/v1/tokens/${t.token_id}`, {
            body: { allowed_hosts: ['ok.example', 'evil .com'] },
          }),
          400,
          'invalid_parameter',
          'allowed_hosts[1]',
        );
        expectError(
          await c.request('PATCH', `/v1/tokens/${t.token_id}`, { body: { allowed_ips: ['300.1.1.1'] } }),
          400,
          'invalid_parameter',
          'allowed_ips[0]',
        );
        expectError(
          await c.request('PATCH', `/v1/tokens/${t.token_id}`, {
            body: { expires_at: '2001-01-01T00:00:00.000Z' },
          }),
          400,
          'invalid_parameter',
          'expires_at',
        );
        expectError(
          await c.request('PATCH', `/v1/tokens/${t.token_id}`, { body: { provider: 'anthropic' } }),
          400,
          'unknown_parameter',
        );
      });

      it("is a 404 for an unknown id and for another account's token", async () => {
        const other = await newClient(h, 'unlimited', 'other');
        const theirs = await createToken(other);
        expectError(
          await c.request('PATCH', `/v1/tokens/${UNKNOWN_TOKEN_ID}`, { body: { name: 'x' } }),
          404,
          'token_not_found',
        );
        expectError(
          await c.request('PATCH', `/v1/tokens/${theirs.token_id}`, { body: { name: 'x' } }),
          404,
          'token_not_found',
        );
        expect(ok<TokenJson>(await other.request('GET', `/v1/tokens/${theirs.token_id}`)).name).toBe(
          'web app',
        );
      });
    });

    describe('POST /v1/tokens/revoke_all', () => {
      it('revokes every active token of the account only, with one token.revoked event each', async () => {
        const a = await newClient(h, 'unlimited', 'kill');
        const other = await newClient(h, 'unlimited', 'bystander');
        const tokens = [await createToken(a), await createToken(a), await createToken(a)];
        ok(await a.request('DELETE', `/v1/tokens/${tokens[0]?.token_id ?? ''}`));
        const theirs = await createToken(other);

        const result = ok<ListJson<TokenJson>>(await a.request('POST', '/v1/tokens/revoke_all'));
        expect(result.data.map((t) => t.token_id).sort()).toEqual(
          [tokens[1]?.token_id, tokens[2]?.token_id].sort(),
        );
        expect(result.data.every((t) => t.status === 'revoked')).toBe(true);
        const active = ok<ListJson<TokenJson>>(await a.request('GET', '/v1/tokens?status=active'));
        expect(active.data).toEqual([]);
        const events = ok<ListJson<{ type: string; data: { token_id: string } }>>(
          await a.request('GET', '/v1/events?type=token.revoked'),
        );
        expect(events.data).toHaveLength(3);
        expect(ok<TokenJson>(await other.request('GET', `/v1/tokens/${theirs.token_id}`)).status).toBe(
          'active',
        );

        // Again: nothing left to revoke, no new events.
        expect(ok<ListJson<TokenJson>>(await a.request('POST', '/v1/tokens/revoke_all')).data).toEqual([]);
        expect(
          ok<ListJson<unknown>>(await a.request('GET', '/v1/events?type=token.revoked')).data,
        ).toHaveLength(3);
      });

      it('refuses a body that looks like it narrows the revocation, and revokes nothing', async () => {
        const a = await newClient(h, 'unlimited', 'narrow');
        const kept = await createToken(a);
        for (const body of [{ token_ids: [kept.token_id] }, [kept.token_id], 'all']) {
          const res = await a.request('POST', '/v1/tokens/revoke_all', { body });
          const error = expectError(
            res,
            400,
            'unknown_parameter',
            Array.isArray(body) || typeof body === 'string' ? undefined : 'token_ids',
          );
          expect(error.message).toContain('takes no request body');
        }
        expectError(
          await a.request('DELETE', `/v1/tokens/${kept.token_id}`, { body: { reason: 'leaked' } }),
          400,
          'unknown_parameter',
          'reason',
        );
        expect(ok<TokenJson>(await a.request('GET', `/v1/tokens/${kept.token_id}`)).status).toBe('active');
        // An empty object carries no field: the kill switch works with it.
        const revoked = ok<ListJson<TokenJson>>(
          await a.request('POST', '/v1/tokens/revoke_all', { body: {} }),
        );
        expect(revoked.data.map((t) => t.token_id)).toEqual([kept.token_id]);
      });
    });

    describe('GET /v1/usage', () => {
      it('counts forwarded and refused requests per hour from the rollups the log writer keeps', async () => {
        const u = await newClient(h, 'unlimited', 'usage');
        const t = await createToken(u);
        const now = clock.now();
        const hour = (back: number) => new Date(now.getTime() - back * 3_600_000).toISOString();
        const mine = { accountId: u.accountId, tokenId: t.token_id };
        const records = [
          record({ ...mine, forwarded: true, status: 200, authorized: true, timestamp: hour(0) }),
          record({ ...mine, forwarded: true, status: 200, authorized: true, timestamp: hour(0) }),
          record({ ...mine, forwarded: true, status: 200, authorized: true, timestamp: hour(3) }),
          record({ ...mine, forwarded: false, status: 403, authorized: false, timestamp: hour(3) }),
          record({ ...mine, forwarded: false, status: 429, authorized: false, timestamp: hour(5) }),
          record({ ...mine, forwarded: false, status: 429, authorized: true, timestamp: hour(5) }),
          record({
            ...mine,
            forwarded: false,
            status: 429,
            authorized: true,
            errorCode: 'budget_exceeded',
            timestamp: hour(5),
          }),
          record({ ...mine, forwarded: false, status: 401, authorized: false, timestamp: hour(23) }),
          // Outside the window, and a record of no account: neither counts.
          record({ ...mine, forwarded: true, status: 200, authorized: true, timestamp: hour(30) }),
          record({
            accountId: null,
            tokenId: null,
            forwarded: false,
            status: 401,
            authorized: false,
            timestamp: hour(0),
          }),
        ];
        const writer = createRequestLogWriter({
          store: h.store,
          logger: capture().logger,
          flushIntervalMs: 60_000,
        });
        for (const r of records) writer.write(r);
        await writer.close();

        const usage = ok<UsageJson>(await u.request('GET', '/v1/usage?window=24h&bucket=1h'));
        expect(usage.buckets).toHaveLength(24);
        expect(usage.forwarded).toBe(3);
        expect(usage.refused).toBe(5);
        expect(usage.refused_by_reason).toMatchObject({
          origin_or_ip_not_allowed: 1,
          ip_backoff: 1,
          rate_or_quota_limit: 1,
          budget_exceeded: 1,
          token_revoked_or_expired: 1,
          upstream_error: 0,
        });
        expect(usage.buckets.at(-1)).toMatchObject({ forwarded: 2, refused: 0 });
        expect(usage.buckets.at(-4)).toMatchObject({ forwarded: 1, refused: 1 });
        expect(usage.buckets.at(-6)).toMatchObject({ forwarded: 0, refused: 3 });
        expect(usage.buckets[0]).toMatchObject({ forwarded: 0, refused: 1 });

        const week = ok<UsageJson>(await u.request('GET', '/v1/usage?window=7d&bucket=1d'));
        expect(week.buckets).toHaveLength(7);
        expect(week.forwarded).toBe(4);

        // Another account sees none of it.
        const other = await newClient(h, 'unlimited', 'usage-other');
        const theirs = ok<UsageJson>(await other.request('GET', '/v1/usage'));
        expect(theirs.forwarded + theirs.refused).toBe(0);
      });

      it('rejects an unknown window or bucket', async () => {
        expectError(await c.request('GET', '/v1/usage?window=2h'), 400, 'invalid_parameter');
        expectError(await c.request('GET', '/v1/usage?bucket=5m'), 400, 'invalid_parameter');
      });
    });

    describe('GET /v1/webhooks/:id/deliveries', () => {
      it('is a 404 for an unknown endpoint', async () => {
        expectError(
          await c.request('GET', '/v1/webhooks/wh_1111111111111111111111/deliveries'),
          404,
          'webhook_not_found',
        );
      });
    });

    describe('the dashboard pages', () => {
      it('serve the built HTML with the §12 headers and no cache, assets with a long cache', async () => {
        for (const page of ['/', '/tokens', '/anomalies', '/settings']) {
          const res = await h.app.inject({ method: 'GET', url: page });
          expect(res.statusCode, page).toBe(200);
          expect(res.headers['content-type']).toContain('text/html');
          expect(res.headers['cache-control']).toBe('no-cache');
          const csp = String(res.headers['content-security-policy']);
          expect(csp).toContain("default-src 'self'");
          expect(csp).toContain("frame-ancestors 'none'");
          expect(/script-src[^;]*unsafe-inline/.test(csp)).toBe(false);
          expect(res.headers['x-content-type-options']).toBe('nosniff');
          expect(res.headers['referrer-policy']).toBe('no-referrer');
          expect(res.body).toContain('<meta name="viewport" content="width=device-width, initial-scale=1"');
        }
        const html = (await h.app.inject({ method: 'GET', url: '/' })).body;
        const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1] as string);
        expect(assets.length).toBeGreaterThanOrEqual(2);
        for (const asset of assets) {
          expect(asset).toMatch(/-[A-Za-z0-9_-]{8}\.(js|css)$/);
          const res = await h.app.inject({ method: 'GET', url: asset });
          expect(res.statusCode).toBe(200);
          expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
          expect(res.headers['x-content-type-options']).toBe('nosniff');
        }
        // Nothing in the page loads from another origin.
        expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
        expect((await h.app.inject({ method: 'GET', url: '/assets/nope.js' })).statusCode).toBe(404);
      });

      it('send a view asked for with a trailing slash to its address, query kept', async () => {
        const plain = await h.app.inject({ method: 'GET', url: '/tokens/' });
        expect(plain.statusCode).toBe(308);
        expect(plain.headers.location).toBe('/tokens');
        expect(plain.headers['x-frame-options']).toBe('DENY');
        const linked = await h.app.inject({ method: 'GET', url: '/anomalies/?token_id=tok_1&x=%2F' });
        expect(linked.statusCode).toBe(308);
        expect(linked.headers.location).toBe('/anomalies?token_id=tok_1&x=%2F');
        // Only a view's own address: anything under it stays unknown.
        expect((await h.app.inject({ method: 'GET', url: '/tokens/extra' })).statusCode).toBe(404);
      });
    });
  });
}
