/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_REFUSAL, refuseAuditEntries } from '../support/audit-refusal.js';
import { databases } from '../support/databases.js';
import { storeDb } from '../support/store-internals.js';
import { startEventsHarness, startReceiver, type EventsHarness, type Receiver } from '../events/support.js';

const REAL_KEY = `sk-ATOMIC-SECRET-${'a'.repeat(24)}`;

/**
 * A change and its audit entry commit together (src/api/audit.ts). The audit table is made to refuse
 * inserts with a trigger in the real database; every change must then fail whole: the client is told
 * (5xx), and neither the change nor the webhook event its entry would announce is left behind.
 */
for (const fixture of databases) {
  describe.skipIf(!fixture.available)(
    `a change and its audit entry commit together (${fixture.name})`,
    () => {
      let h: EventsHarness;
      let receiver: Receiver;

      beforeAll(async () => {
        receiver = await startReceiver();
        h = await startEventsHarness(fixture);
      });
      afterAll(async () => {
        await h?.close();
        await receiver?.close();
      });

      async function ok(method: string, url: string, body?: unknown): Promise<any> {
        const res = await h.request(method, url, body);
        expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
        return res.body;
      }

      async function sessionCount(): Promise<number> {
        // Sessions have no listing route: count the table's rows.
        const db = storeDb(h.db.store);
        const row = await db
          .selectFrom('dashboard_sessions')
          .select((e) => e.fn.countAll<string | number>().as('n'))
          .executeTakeFirstOrThrow();
        return Number(row.n);
      }

      async function auditCount(): Promise<number> {
        return ((await ok('GET', '/v1/audit?limit=100')).data as unknown[]).length;
      }

      it('refuses every change whose entry cannot be written, and leaves no part of it behind', async () => {
        const hook = await ok('POST', '/v1/webhooks', { url: receiver.url, events: ['*'] });
        const spare = await ok('POST', '/v1/api_keys', { name: 'spare' });
        const key = await ok('POST', '/v1/keys', { name: 'kept', provider: 'openai', real_key: REAL_KEY });
        const token = await ok('POST', '/v1/tokens', {
          name: 'kept',
          provider: 'openai',
          allowed_hosts: ['a.example'],
          key_id: key.key_id,
        });
        const before = {
          audit: await auditCount(),
          events: ((await ok('GET', '/v1/events?limit=100')).data as unknown[]).length,
          keys: (await ok('GET', '/v1/keys')).data.map((k: any) => k.key_id),
          tokens: (await ok('GET', '/v1/tokens')).data.map((t: any) => [t.token_id, t.status]),
          apiKeys: (await ok('GET', '/v1/api_keys')).data.map((k: any) => k.id),
          webhooks: (await ok('GET', '/v1/webhooks')).data.map((w: any) => w.webhook_id),
          account: await ok('GET', '/v1/account'),
          hook: await ok('GET', `/v1/webhooks/${hook.webhook_id}`),
          deliveries: (await ok('GET', `/v1/webhooks/${hook.webhook_id}/deliveries?limit=100`)).data
            .length as number,
        };
        const anEvent = (await ok('GET', '/v1/events?limit=1')).data[0].id as string;
        // Everything announced so far has arrived, so what arrives later comes from the steps below.
        const delivered = (await receiver.waitFor(before.events)).length;

        const acceptAuditEntries = await refuseAuditEntries(h.db.store);
        const changes: [string, string, unknown?][] = [
          ['POST', '/v1/keys', { name: 'lost', provider: 'openai', real_key: REAL_KEY }],
          [
            'POST',
            '/v1/tokens',
            { name: 'lost', provider: 'openai', allowed_hosts: ['b.example'], real_key: REAL_KEY },
          ],
          ['PATCH', `/v1/tokens/${token.token_id}`, { name: 'renamed' }],
          ['DELETE', `/v1/tokens/${token.token_id}`],
          ['POST', '/v1/tokens/revoke_all'],
          ['DELETE', `/v1/keys/${key.key_id}`],
          ['POST', `/v1/keys/${key.key_id}/rotate`, { real_key: `${REAL_KEY}-rotated` }],
          ['POST', '/v1/api_keys', { name: 'lost' }],
          ['DELETE', `/v1/api_keys/${spare.id}`],
          ['PATCH', `/v1/webhooks/${hook.webhook_id}`, { enabled: false }],
          ['POST', `/v1/webhooks/${hook.webhook_id}/test`],
          ['POST', `/v1/events/${anEvent}/redeliver`],
          ['DELETE', `/v1/webhooks/${hook.webhook_id}`],
          ['POST', '/v1/webhooks', { url: receiver.url, events: ['*'] }],
          ['PATCH', '/v1/account', { name: 'renamed' }],
        ];
        for (const [method, url, body] of changes) {
          const res = await h.request(method, url, body);
          expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBe(500);
          expect(res.body.error.code).toBe('internal_error');
          // The database's message stays in the log, not in the answer.
          expect(JSON.stringify(res.body)).not.toContain(AUDIT_REFUSAL);
        }
        // Signing in to the dashboard opens a session only with its entry.
        const signIn = await h.app.inject({
          method: 'POST',
          url: '/v1/session',
          headers: { host: 'api.test', origin: 'https://api.test', 'content-type': 'application/json' },
          payload: JSON.stringify({ api_key: h.apiKey }),
        });
        expect(signIn.statusCode, signIn.body).toBe(500);
        expect(signIn.headers['set-cookie']).toBeUndefined();
        expect(await sessionCount()).toBe(0);
        await acceptAuditEntries();

        expect(await auditCount()).toBe(before.audit);
        expect(((await ok('GET', '/v1/events?limit=100')).data as unknown[]).length).toBe(before.events);
        expect((await ok('GET', '/v1/keys')).data.map((k: any) => k.key_id)).toEqual(before.keys);
        expect((await ok('GET', '/v1/tokens')).data.map((t: any) => [t.token_id, t.status])).toEqual(
          before.tokens,
        );
        expect((await ok('GET', `/v1/tokens/${token.token_id}`)).name).toBe('kept');
        expect((await ok('GET', '/v1/api_keys')).data.map((k: any) => k.id)).toEqual(before.apiKeys);
        expect((await ok('GET', '/v1/webhooks')).data.map((w: any) => w.webhook_id)).toEqual(before.webhooks);
        expect(await ok('GET', '/v1/account')).toEqual(before.account);
        expect(await ok('GET', `/v1/webhooks/${hook.webhook_id}`)).toEqual(before.hook);
        expect((await ok('GET', `/v1/webhooks/${hook.webhook_id}/deliveries?limit=100`)).data).toHaveLength(
          before.deliveries,
        );
        expect(h.logs.some((line) => line.includes(AUDIT_REFUSAL))).toBe(true);

        // With the audit table writable again the same change goes through, entry and event together.
        await ok('DELETE', `/v1/tokens/${token.token_id}`);
        expect((await ok('GET', `/v1/tokens/${token.token_id}`)).status).toBe('revoked');
        const entries = (await ok('GET', '/v1/audit?limit=1')).data;
        expect(entries.map((e: any) => [e.action, e.object_id])).toEqual([['token.revoked', token.token_id]]);
        const after = await receiver.waitFor(delivered + 1);
        // Nothing the refused changes would have announced was ever sent: only this revocation.
        expect(after.slice(delivered).map((r) => JSON.parse(r.body).type)).toEqual(['token.revoked']);
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(receiver.requests).toHaveLength(delivered + 1);
      });
    },
  );
}
