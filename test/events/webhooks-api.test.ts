/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-non-null-assertion, @typescript-eslint/no-unsafe-call --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.js';
import { databases } from '../support/databases.js';
import { until } from '../support/poll.js';
import { PROXY_URL, startEventsHarness, type EventsHarness } from './support.js';

const TOKEN_BODY = {
  name: 'web app',
  provider: 'openai',
  allowed_hosts: ['app.example.com'],
  real_key: 'sk-test-0123456789abcdefWXYZ',
};

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`webhooks and events API (${fixture.name})`, () => {
    let h: EventsHarness;
    let strict: EventsHarness;
    beforeAll(async () => {
      h = await startEventsHarness(fixture, { config: { expirySweepIntervalMs: 200 } });
      strict = await startEventsHarness(fixture, {
        config: { allowPrivateWebhooks: false },
        apiResolver: (host) =>
          Promise.resolve(host === 'internal.example' ? [{ address: '10.1.2.3', family: 4 }] : []),
      });
    });
    afterAll(async () => {
      await h.close();
      await strict.close();
    });

    it('creates, lists, gets and deletes an endpoint; the secret is shown only on create', async () => {
      const created = await h.request('POST', '/v1/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        events: ['token.revoked', 'breach.detected', 'token.revoked'],
      });
      expect(created.status).toBe(201);
      expect(Object.keys(created.body).sort()).toEqual(
        [
          'webhook_id',
          'url',
          'events',
          'created_at',
          'disabled_at',
          'disabled_reason',
          'failing_since',
          'secret',
        ].sort(),
      );
      expect(created.body.webhook_id).toMatch(/^wh_[1-9A-HJ-NP-Za-km-z]{22}$/);
      expect(created.body.events).toEqual(['token.revoked', 'breach.detected']);
      expect(created.body.disabled_at).toBeNull();
      const secret = created.body.secret as string;
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);

      const id = created.body.webhook_id as string;
      const got = await h.request('GET', `/v1/webhooks/${id}`);
      expect(got.status).toBe(200);
      expect(got.body).not.toHaveProperty('secret');
      expect(JSON.stringify(got.body)).not.toContain(secret.slice(6));
      const list = await h.request('GET', '/v1/webhooks');
      expect(list.body.object).toBe('list');
      expect(list.body.data.map((w: { webhook_id: string }) => w.webhook_id)).toContain(id);
      expect(JSON.stringify(list.body)).not.toContain(secret.slice(6));

      const deleted = await h.request('DELETE', `/v1/webhooks/${id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body.webhook_id).toBe(id);
      expect((await h.request('GET', `/v1/webhooks/${id}`)).body.error.code).toBe('webhook_not_found');
      expect((await h.request('DELETE', `/v1/webhooks/${id}`)).status).toBe(404);
      expect(h.logs.join('\n')).not.toContain(secret.slice(6));
    });

    it('accepts ["*"], and refuses bad URLs, unknown or empty event lists', async () => {
      const all = await h.request('POST', '/v1/webhooks', {
        url: 'https://hooks.test:8443/x',
        events: ['*'],
      });
      expect(all.status).toBe(201);
      expect(all.body.events).toEqual(['*']);

      const cases: [unknown, string, string][] = [
        [{ url: 'not a url', events: ['*'] }, 'invalid_parameter', 'url'],
        [{ url: 'ftp://example.com/x', events: ['*'] }, 'invalid_parameter', 'url'],
        [{ url: 'https://user:pw@example.com/x', events: ['*'] }, 'invalid_parameter', 'url'],
        [{ url: 'https://example.com/x', events: [] }, 'invalid_parameter', 'events'],
        [
          { url: 'https://example.com/x', events: ['token.revoked', 'token.exploded'] },
          'invalid_parameter',
          'events[1]',
        ],
        [{ url: 'https://example.com/x', events: ['*', 'token.revoked'] }, 'invalid_parameter', 'events[0]'],
        [{ url: 'https://example.com/x' }, 'missing_parameter', 'events'],
        [{ url: 'https://example.com/x', events: ['*'], secret: 'x' }, 'unknown_parameter', 'secret'],
      ];
      for (const [body, code, param] of cases) {
        const res = await h.request('POST', '/v1/webhooks', body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error.code, JSON.stringify(res.body)).toBe(code);
        expect(res.body.error.param, JSON.stringify(res.body)).toBe(param);
      }
    });

    it('refuses private, loopback and link-local URLs without allow_private_webhooks', async () => {
      for (const url of [
        'https://127.0.0.1/x',
        'https://localhost:8443/x',
        'https://10.0.0.5/x',
        'https://192.168.1.1/x',
        'https://169.254.169.254/latest/meta-data',
        'https://[::1]/x',
        'https://[fe80::1]/x',
        'https://[::ffff:127.0.0.1]/x',
        'https://internal.example/x', // resolves to 10.1.2.3 (injected resolver)
        'http://203.0.113.10/x', // public, but plain http needs the flag too
      ]) {
        const res = await strict.request('POST', '/v1/webhooks', { url, events: ['*'] });
        expect(res.status, url).toBe(400);
        expect(res.body.error.param).toBe('url');
        expect(res.body.error.message).toContain('allow_private_webhooks');
      }
      const ok = await strict.request('POST', '/v1/webhooks', {
        url: 'https://203.0.113.10/hook',
        events: ['*'],
      });
      expect(ok.status).toBe(201);
      const unresolved = await strict.request('POST', '/v1/webhooks', {
        url: 'https://not-yet.example/hook',
        events: ['*'],
      });
      expect(unresolved.status).toBe(201);
    });

    it('emits token.revoked once on revoke, with the token object as data; a repeated DELETE emits nothing', async () => {
      const token = (await h.request('POST', '/v1/tokens', TOKEN_BODY)).body;
      const first = await h.request('DELETE', `/v1/tokens/${token.token_id}`);
      expect(first.status).toBe(200);
      expect((await h.request('DELETE', `/v1/tokens/${token.token_id}`)).status).toBe(200);
      const list = await h.request('GET', '/v1/events?type=token.revoked&limit=100');
      const mine = list.body.data.filter(
        (e: { data: { token_id: string } }) => e.data.token_id === token.token_id,
      );
      expect(mine).toHaveLength(1);
      expect(Object.keys(mine[0]).sort()).toEqual(['created_at', 'data', 'id', 'type']);
      expect(mine[0].id).toMatch(/^evt_[1-9A-HJ-NP-Za-km-z]{22}$/);
      expect(mine[0].type).toBe('token.revoked');
      expect(mine[0].data).toEqual(first.body);
      expect(mine[0].data.proxy_base_url).toBe(`${PROXY_URL}/openai`);
    });

    it('emits one token.revoked per token when their key is deleted, and none on a repeat', async () => {
      const key = (
        await h.request('POST', '/v1/keys', {
          name: 'k',
          provider: 'openai',
          real_key: 'sk-key-0123456789abcdefWXYZ',
        })
      ).body;
      const t1 = (
        await h.request('POST', '/v1/tokens', { ...TOKEN_BODY, real_key: undefined, key_id: key.key_id })
      ).body;
      const t2 = (
        await h.request('POST', '/v1/tokens', { ...TOKEN_BODY, real_key: undefined, key_id: key.key_id })
      ).body;
      await h.request('DELETE', `/v1/tokens/${t2.token_id}`);
      expect((await h.request('DELETE', `/v1/keys/${key.key_id}`)).status).toBe(200);
      expect((await h.request('DELETE', `/v1/keys/${key.key_id}`)).status).toBe(200);
      const events = (await h.request('GET', '/v1/events?type=token.revoked&limit=100')).body.data as {
        data: { token_id: string; status: string };
      }[];
      expect(events.filter((e) => e.data.token_id === t1.token_id)).toHaveLength(1);
      expect(events.filter((e) => e.data.token_id === t2.token_id)).toHaveLength(1);
      expect(events.find((e) => e.data.token_id === t1.token_id)?.data.status).toBe('revoked');
    });

    it('lists events newest first, filters by type, and refuses an unknown type', async () => {
      await h.events.publisher.publish({
        accountId: h.accountId,
        type: 'quota.threshold_reached',
        data: { plan: 'free', limit: 100000, used: 80000, period: '2026-01' },
      });
      const all = (await h.request('GET', '/v1/events?limit=100')).body.data as {
        created_at: string;
        type: string;
      }[];
      expect(all.length).toBeGreaterThan(1);
      for (let i = 1; i < all.length; i++) expect(all[i - 1]!.created_at >= all[i]!.created_at).toBe(true);
      expect(all[0]!.type).toBe('quota.threshold_reached');
      const quota = (await h.request('GET', '/v1/events?type=quota.threshold_reached')).body;
      expect(quota.data).toHaveLength(1);
      expect(quota.data[0].data).toEqual({ plan: 'free', limit: 100000, used: 80000, period: '2026-01' });
      expect((await h.request('GET', '/v1/events?type=token.exploded')).status).toBe(400);
      // Another account sees none of them.
      const other = await createAccount(h.db.store, 'other', 'free', new Date());
      const theirs = await h.request('GET', '/v1/events', undefined, other.apiKey);
      expect(theirs.body.data).toEqual([]);
    });

    it('marks expired tokens and emits token.expired within the sweep interval, once', async () => {
      const expiresAt = new Date(Date.now() + 600).toISOString();
      const token = (await h.request('POST', '/v1/tokens', { ...TOKEN_BODY, expires_at: expiresAt })).body;
      const event = await until(
        "the expired token's token.expired event",
        async () => {
          const list = (await h.request('GET', '/v1/events?type=token.expired&limit=100')).body.data as {
            created_at: string;
            data: { token_id: string; status: string };
          }[];
          return list.find((e) => e.data.token_id === token.token_id);
        },
        { timeoutMs: 5000 },
      );
      expect(event.data.status).toBe('expired');
      expect(Date.parse(event.created_at) - Date.parse(expiresAt)).toBeLessThan(2000);
      const stored = await h.db.store.tokens.get(h.accountId, token.token_id);
      expect(stored?.status).toBe('expired');
      // Concurrent sweeps (as from several processes) emit nothing more.
      await Promise.all([h.events.sweepExpired(), h.events.sweepExpired(), strict.events.sweepExpired()]);
      const again = (await h.request('GET', '/v1/events?type=token.expired&limit=100')).body.data as {
        data: { token_id: string };
      }[];
      expect(again.filter((e) => e.data.token_id === token.token_id)).toHaveLength(1);
    });
  });
}
