/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { AUDIT_ACTIONS } from '../../src/audit/action-names.js';
import { databases } from '../support/databases.js';
import { storeDb } from '../support/store-internals.js';
import { startEventsHarness, startReceiver, type EventsHarness, type Receiver } from '../events/support.js';

const HOST = 'dash.test:8443';
const ORIGIN = `https://${HOST}`;
const REAL_KEY = `sk-AUDIT-SECRET-${'q'.repeat(24)}`;
const ROTATED_KEY = `sk-AUDIT-ROTATED-${'r'.repeat(24)}`;

interface Call {
  readonly status: number;
  readonly body: any;
  readonly text: string;
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`audit log (${fixture.name})`, () => {
    let h: EventsHarness;
    let receiver: Receiver;
    /** Every response body the test saw, for the secret scan at the end. */
    const seen: string[] = [];

    beforeAll(async () => {
      receiver = await startReceiver();
      h = await startEventsHarness(fixture);
    });
    afterAll(async () => {
      await h?.close();
      await receiver?.close();
    });

    async function call(
      method: string,
      url: string,
      options: { body?: unknown; apiKey?: string; cookie?: string; ip?: string } = {},
    ): Promise<Call> {
      const headers: Record<string, string> = { host: HOST };
      if (options.cookie !== undefined) {
        headers.cookie = `tokenproxy_session=${options.cookie}`;
        headers.origin = ORIGIN;
      } else {
        headers.authorization = `Bearer ${options.apiKey ?? h.apiKey}`;
      }
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const res = await h.app.inject({
        method: method as 'GET',
        url,
        headers,
        remoteAddress: options.ip ?? '198.51.100.7',
        ...(options.body === undefined ? {} : { payload: JSON.stringify(options.body) }),
      });
      seen.push(res.body);
      return {
        status: res.statusCode,
        body: res.body === '' ? undefined : JSON.parse(res.body),
        text: res.body,
      };
    }

    function expectOk(res: Call, status = 200): any {
      const failures = res.status >= 500 ? h.logs.filter((l) => l.includes('request failed')).join('\n') : '';
      expect(res.status, `${res.text}\n${failures}`).toBe(status);
      return res.body;
    }

    async function auditList(query = '', apiKey?: string): Promise<any[]> {
      const res = await call('GET', `/v1/audit${query}`, { apiKey });
      return (await expectOk(res)).data as any[];
    }

    it('records each API change with the key name, the object id and the IP; token.created reaches a webhook', async () => {
      const ops = await expectOk(await call('POST', '/v1/api_keys', { body: { name: 'ops' } }), 201);
      const hook = await expectOk(
        await call('POST', '/v1/webhooks', {
          apiKey: ops.api_key,
          ip: '203.0.113.9',
          body: { url: receiver.url, events: ['token.created', 'api_key.created', 'api_key.deleted'] },
        }),
        201,
      );
      const asOps = (method: string, url: string, body?: unknown) =>
        call(method, url, { apiKey: ops.api_key, body, ip: '203.0.113.9' });
      const key = await expectOk(
        await asOps('POST', '/v1/keys', { name: 'k', provider: 'openai', real_key: REAL_KEY }),
        201,
      );
      await expectOk(await asOps('POST', `/v1/keys/${key.key_id}/rotate`, { real_key: ROTATED_KEY }));
      const token = await expectOk(
        await asOps('POST', '/v1/tokens', {
          name: 't',
          provider: 'openai',
          allowed_hosts: ['a.example'],
          key_id: key.key_id,
        }),
        201,
      );
      await expectOk(await asOps('PATCH', `/v1/tokens/${token.token_id}`, { name: 't2' }));
      await expectOk(await asOps('DELETE', `/v1/tokens/${token.token_id}`));
      // A repeated revoke changes nothing and is not recorded again.
      await expectOk(await asOps('DELETE', `/v1/tokens/${token.token_id}`));
      await expectOk(await asOps('POST', '/v1/tokens/revoke_all'));
      await expectOk(await asOps('DELETE', `/v1/keys/${key.key_id}`));
      await expectOk(await asOps('DELETE', `/v1/keys/${key.key_id}`));
      await expectOk(await asOps('PATCH', '/v1/account', { alert_email: 'ops@example.com' }));
      const extra = await expectOk(
        await asOps('POST', '/v1/api_keys', { name: 'extra', scope: 'read' }),
        201,
      );
      await expectOk(await asOps('DELETE', `/v1/api_keys/${extra.id}`));
      // Deleting the endpoint drops its pending deliveries, so the receiver is read first.
      const received = await receiver.waitFor(3);
      await expectOk(await asOps('DELETE', `/v1/webhooks/${hook.webhook_id}`));

      const entries = (await auditList('?limit=100')).reverse();
      expect(entries.map((e) => [e.action, e.object_id])).toEqual([
        ['api_key.created', ops.id],
        ['webhook.created', hook.webhook_id],
        ['key.created', key.key_id],
        ['key.rotated', key.key_id],
        ['token.created', token.token_id],
        ['token.updated', token.token_id],
        ['token.revoked', token.token_id],
        ['token.revoked_all', h.accountId],
        ['key.deleted', key.key_id],
        ['account.updated', h.accountId],
        ['api_key.created', extra.id],
        ['api_key.deleted', extra.id],
        ['webhook.deleted', hook.webhook_id],
      ]);
      expect(entries[0]).toMatchObject({ actor: { type: 'api_key', name: 'default' }, ip: '198.51.100.7' });
      for (const entry of entries.slice(1)) {
        expect(entry.actor).toEqual({ type: 'api_key', id: ops.id, name: 'ops' });
        expect(entry.ip).toBe('203.0.113.9');
        expect(entry.id).toMatch(/^aud_/);
        expect(Object.keys(entry).sort()).toEqual(['action', 'actor', 'created_at', 'id', 'ip', 'object_id']);
      }
      for (const action of entries.map((e) => e.action)) expect(AUDIT_ACTIONS).toContain(action);

      // The subscribed audit-born events reach the receiver, signed like every other event.
      const types = received.map((r) => JSON.parse(r.body).type as string).sort();
      expect(types).toEqual(['api_key.created', 'api_key.deleted', 'token.created']);
      const created = received.map((r) => JSON.parse(r.body)).find((e) => e.type === 'token.created');
      expect(created.data).toMatchObject({ token_id: token.token_id, name: 't', status: 'active' });
      expect(created.data.sanitized_key).toBeUndefined();
      for (const r of received) expect(r.headers['webhook-signature']).toMatch(/^v1,/);
      const events = await expectOk(await call('GET', '/v1/events?type=token.updated'));
      expect(events.data.map((e: any) => e.data.token_id)).toEqual([token.token_id]);
    });

    it('filters by action and object id, and pages with a cursor', async () => {
      const tokens = await auditList('?action=token.created');
      expect(tokens.length).toBeGreaterThan(0);
      for (const e of tokens) expect(e.action).toBe('token.created');
      const objectId = tokens[0].object_id as string;
      const history = await auditList(`?object_id=${objectId}`);
      expect(history.map((e) => e.action)).toEqual(['token.revoked', 'token.updated', 'token.created']);
      const first = await expectOk(await call('GET', '/v1/audit?limit=2'));
      expect(first.has_more).toBe(true);
      const second = await expectOk(await call('GET', `/v1/audit?limit=2&cursor=${first.next_cursor}`));
      const all = await auditList('?limit=100');
      expect([...first.data, ...second.data].map((e: any) => e.id)).toEqual(all.slice(0, 4).map((e) => e.id));
      const bad = await call('GET', '/v1/audit?action=token.stolen');
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: 'invalid_parameter', param: 'action' });
    });

    it('another account sees none of these entries', async () => {
      const other = await expectOk(await call('GET', '/v1/account'));
      expect(other.account_id).toBe(h.accountId);
      const { createAccount } = await import('../../src/accounts/create-account.js');
      const stranger = await createAccount(h.db.store, 'stranger', 'free', new Date());
      expect(await auditList('', stranger.apiKey)).toEqual([]);
    });

    it('records changes made through a dashboard session as "dashboard session", and the sign-in by key name', async () => {
      const signIn = await h.app.inject({
        method: 'POST',
        url: '/v1/session',
        remoteAddress: '192.0.2.44',
        headers: { host: HOST, origin: ORIGIN, 'content-type': 'application/json' },
        payload: JSON.stringify({ api_key: h.apiKey }),
      });
      expect(signIn.statusCode, signIn.body).toBe(201);
      const cookie = /tokenproxy_session=([^;]+)/.exec(String(signIn.headers['set-cookie']))?.[1] as string;
      const token = await expectOk(
        await call('POST', '/v1/tokens', {
          cookie,
          ip: '192.0.2.44',
          body: {
            name: 'from the dashboard',
            provider: 'openai',
            allowed_hosts: ['d.example'],
            real_key: REAL_KEY,
          },
        }),
        201,
      );
      seen.push(token.sanitized_key);
      await expectOk(await call('DELETE', `/v1/tokens/${token.token_id}`, { cookie, ip: '192.0.2.44' }));
      const entries = await auditList('?limit=3');
      expect(entries.map((e) => [e.action, e.actor, e.ip])).toEqual([
        ['token.revoked', { type: 'session', id: null, name: 'dashboard session' }, '192.0.2.44'],
        ['token.created', { type: 'session', id: null, name: 'dashboard session' }, '192.0.2.44'],
        [
          'session.created',
          { type: 'api_key', id: expect.stringMatching(/^ak_/), name: 'default' },
          '192.0.2.44',
        ],
      ]);
    });

    it('holds no secret: no real key, sanitized token or API key in the audit table or any response', async () => {
      const created = await expectOk(
        await call('POST', '/v1/tokens', {
          body: { name: 'scan', provider: 'openai', allowed_hosts: ['s.example'], real_key: REAL_KEY },
        }),
        201,
      );
      const apiKey = await expectOk(await call('POST', '/v1/api_keys', { body: { name: 'scan' } }), 201);
      // The table as stored, not as the API shows it.
      const db = storeDb(h.db.store);
      const rows = await sql<Record<string, unknown>>`select * from audit_log`.execute(db);
      const table = JSON.stringify(rows.rows);
      expect(rows.rows.length).toBeGreaterThan(10);
      const secrets = [
        REAL_KEY,
        ROTATED_KEY,
        created.sanitized_key as string,
        apiKey.api_key as string,
        h.apiKey,
      ];
      for (const secret of secrets) expect(table).not.toContain(secret);
      // Responses: each secret appears only in the one answer that hands it out.
      const audit = JSON.stringify(await auditList('?limit=100'));
      const events = JSON.stringify((await expectOk(await call('GET', '/v1/events?limit=100'))).data);
      for (const secret of secrets) {
        expect(audit).not.toContain(secret);
        expect(events).not.toContain(secret);
        expect(seen.filter((body) => body.includes(secret)).length).toBeLessThanOrEqual(1);
      }
      for (const line of h.logs) for (const secret of secrets) expect(line).not.toContain(secret);
    });
  });
}
