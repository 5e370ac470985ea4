/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-non-null-assertion --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newId, newTokenId } from '../../src/ids/formats.js';
import { openStore } from '../../src/store/open.js';
import { databases } from '../support/databases.js';
import { until } from '../support/poll.js';
import {
  DASHBOARD,
  decodeQuotedPrintable,
  startEventsHarness,
  startReceiver,
  startSmtpSink,
  type EventsHarness,
  type Receiver,
  type SmtpSink,
} from './support.js';

const TOKEN_BODY = {
  name: 'checkout widget',
  provider: 'openai',
  allowed_hosts: ['app.example.com'],
  real_key: 'sk-live-REALKEY-0123456789abcdefWXYZ',
};

async function addWebhook(
  h: EventsHarness,
  url: string,
  events: string[] = ['*'],
): Promise<{ id: string; secret: string }> {
  const res = await h.request('POST', '/v1/webhooks', { url, events });
  expect(res.status).toBe(201);
  return { id: res.body.webhook_id as string, secret: res.body.secret as string };
}

function headersOf(r: { headers: Record<string, string | string[] | undefined> }): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
    out[name] = String(r.headers[name]);
  return out;
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`webhook and e-mail delivery (${fixture.name})`, () => {
    let receiver: Receiver;
    let smtp: SmtpSink;
    let harnesses: EventsHarness[] = [];
    beforeAll(async () => {
      receiver = await startReceiver();
      smtp = await startSmtpSink();
    });
    afterEach(async () => {
      await Promise.all(harnesses.map((h) => h.close()));
      harnesses = [];
      receiver.requests.length = 0;
      receiver.script([], 200);
    });
    afterAll(async () => {
      await receiver.close();
      await smtp.close();
    });
    async function harness(...args: Parameters<typeof startEventsHarness>[1][]): Promise<EventsHarness> {
      const h = await startEventsHarness(fixture, args[0]);
      harnesses.push(h);
      return h;
    }

    it('delivers a signed event that a Standard Webhooks receiver verifies', async () => {
      const h = await harness();
      const { secret } = await addWebhook(h, receiver.url, ['token.revoked']);
      const token = (await h.request('POST', '/v1/tokens', TOKEN_BODY)).body;
      await h.request('DELETE', `/v1/tokens/${token.token_id}`);
      const [req] = await receiver.waitFor(1);
      const verified = new Webhook(secret).verify(req!.body, headersOf(req!)) as Record<string, unknown>;
      expect(Object.keys(verified)).toEqual(['id', 'type', 'created_at', 'data']);
      expect(verified.type).toBe('token.revoked');
      expect(req!.headers['webhook-id']).toBe(verified.id);
      expect(req!.headers['content-type']).toBe('application/json');
      expect(Math.abs(Number(req!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
      expect(() =>
        new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(req!.body, headersOf(req!)),
      ).toThrow();
      const list = (await h.request('GET', '/v1/events?type=token.revoked')).body.data;
      expect(list[0].id).toBe(verified.id);
      expect(JSON.parse(req!.body)).toEqual(list[0]);
    });

    it('retries after 500s and a dropped connection with the same webhook-id, then marks it failed', async () => {
      const h = await harness({ config: { webhookRetrySchedule: [100, 200, 400] } });
      const { secret } = await addWebhook(h, receiver.url);
      receiver.script([500, 'drop', 503], 500);
      await h.events.publisher.publish({
        accountId: h.accountId,
        type: 'anomaly.detected',
        data: { token_id: 'x', kind: 'rate_spike', details: {} },
      });
      const attempts = await receiver.waitFor(4, 10_000);
      const ids = new Set(attempts.map((r) => r.headers['webhook-id']));
      expect(ids.size).toBe(1);
      for (const r of attempts) new Webhook(secret).verify(r.body, headersOf(r));
      // Spacing follows the schedule (at least the configured delay between attempts).
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(90);
      expect(attempts[3]!.at - attempts[2]!.at).toBeGreaterThanOrEqual(390);
      await until(
        'the delivery to end as failed',
        async () => (await h.db.store.deliveries.countPending()) === 0,
      );
      await new Promise((r) => setTimeout(r, 600));
      expect(receiver.requests).toHaveLength(4);
      expect(h.logs.some((l) => l.includes('"outcome":"failed"'))).toBe(true);
    });

    it('a stopping server cuts off a hanging delivery after its grace, and the delivery is retried later', async () => {
      const h = await harness({ deliveryTimeoutMs: 30_000, config: { webhookRetrySchedule: [60_000] } });
      const { id } = await addWebhook(h, receiver.url);
      receiver.script(['hang']);
      await h.events.publisher.publish({
        accountId: h.accountId,
        type: 'anomaly.detected',
        data: { token_id: 'x', kind: 'rate_spike', details: {} },
      });
      await receiver.waitFor(1);
      const stopping = Date.now();
      await h.events.close(300);
      // Bounded by the grace, not by the 30 s delivery timeout (a wide margin for a loaded machine).
      expect(Date.now() - stopping).toBeLessThan(10_000);
      expect(h.logs.some((l) => l.includes('deliveries still in flight are cut off'))).toBe(true);
      const [delivery] = (await h.request('GET', `/v1/webhooks/${id}/deliveries`)).body.data;
      expect(delivery).toMatchObject({ status: 'pending', attempts: 1 });
      expect(delivery.last_error).toContain('the server was stopping');
    });

    it('a stop while a claim is being answered waits for what it claimed: sent once and recorded', async () => {
      const h = await harness();
      const { id } = await addWebhook(h, receiver.url);
      const deliveries = h.db.store.deliveries;
      const claim = deliveries.claim.bind(deliveries);
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      let claiming: () => void = () => undefined;
      const claimed = new Promise<void>((resolve) => (claiming = resolve));
      // The claim that takes the delivery answers late: the stop comes while it is awaited.
      deliveries.claim = async (...args) => {
        const taken = await claim(...args);
        if (taken.length > 0) {
          claiming();
          await held;
        }
        return taken;
      };
      await h.events.publisher.publish({
        accountId: h.accountId,
        type: 'anomaly.detected',
        data: { token_id: 'x', kind: 'rate_spike', details: {} },
      });
      await claimed;
      const stopping = h.events.close(5_000);
      setTimeout(release, 200);
      await stopping;
      // Sent, and recorded before the store could close: the next start has nothing to send again.
      expect(receiver.requests).toHaveLength(1);
      const [delivery] = (await h.request('GET', `/v1/webhooks/${id}/deliveries`)).body.data;
      expect(delivery).toMatchObject({ status: 'delivered', attempts: 1 });
      expect(h.logs.some((l) => l.includes('recording an attempt failed'))).toBe(false);
    });

    it('disables an endpoint whose deliveries failed for longer than webhook_disable_after', async () => {
      const h = await harness({
        config: { webhookRetrySchedule: [100, 100, 100, 100, 100, 100], webhookDisableAfterMs: 250 },
      });
      const { id } = await addWebhook(h, receiver.url);
      receiver.script([], 500);
      await h.events.publisher.publish({ accountId: h.accountId, type: 'anomaly.detected', data: { n: 1 } });
      const disabled = await until('the endpoint to be disabled', async () => {
        const w = (await h.request('GET', `/v1/webhooks/${id}`)).body as {
          disabled_at: string | null;
          disabled_reason: string | null;
          failing_since: string | null;
        };
        return w.disabled_at === null ? undefined : w;
      });
      expect(disabled.disabled_reason).toMatch(/failed for more than 250ms \(webhook_disable_after;/);
      expect(disabled.failing_since).not.toBeNull();
      expect(await h.db.store.deliveries.countPending()).toBe(0);
      const before = receiver.requests.length;
      await h.events.publisher.publish({ accountId: h.accountId, type: 'anomaly.detected', data: { n: 2 } });
      await new Promise((r) => setTimeout(r, 400));
      expect(receiver.requests.length).toBe(before);
    });

    it('refuses at delivery time a host that resolves to a loopback address when the flag is off', async () => {
      const h = await harness({
        config: { allowPrivateWebhooks: false, webhookRetrySchedule: [] },
        resolver: () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]),
        apiResolver: () => Promise.resolve([{ address: '203.0.113.7', family: 4 }]),
      });
      // Created while the name looked public; at delivery it resolves to loopback (DNS rebinding).
      await addWebhook(h, `https://rebind.example:${receiver.port}/hook`);
      await h.events.publisher.publish({ accountId: h.accountId, type: 'anomaly.detected', data: {} });
      await until(
        'the refused delivery to end',
        async () => (await h.db.store.deliveries.countPending()) === 0,
      );
      expect(receiver.requests).toHaveLength(0);
      expect(h.logs.some((l) => l.includes('refused: the host resolves to a private'))).toBe(true);
    });

    it('e-mails a breach alert to the account alert_email within 30 s, in text and HTML', async () => {
      const h = await harness({ config: { smtpUrl: smtp.url, smtpFrom: 'alerts@tokenproxy.test' } });
      await h.request('PATCH', '/v1/account', { alert_email: 'owner@example.com' });
      const { secret } = await addWebhook(h, receiver.url, ['breach.detected']);
      const token = (await h.request('POST', '/v1/tokens', TOKEN_BODY)).body;
      const sentAt = Date.now();
      await h.events.publisher.publish({
        accountId: h.accountId,
        type: 'breach.detected',
        data: {
          token_id: token.token_id,
          origin: 'https://evil.example.net',
          ip: '198.51.100.23',
          country: 'NL',
          path: '/openai/v1/chat/completions',
          reason: 'origin_not_allowed',
          attempts: 17,
        },
      });
      const [mail] = await smtp.waitFor(1, 30_000);
      expect(mail!.at - sentAt).toBeLessThan(30_000);
      expect(mail!.to).toEqual(['owner@example.com']);
      expect(mail!.from).toBe('alerts@tokenproxy.test');
      const raw = decodeQuotedPrintable(mail!.raw);
      expect(raw).toMatch(/Content-Type: text\/plain/i);
      expect(raw).toMatch(/Content-Type: text\/html/i);
      for (const part of [
        token.token_id,
        'https://evil.example.net',
        '198.51.100.23',
        '/openai/v1/chat/completions',
        '17',
        'checkout widget',
        token.sanitized_key_hint,
        `${DASHBOARD}/anomalies?token_id=${token.token_id}`,
      ]) {
        expect(raw, part).toContain(part);
      }
      expect(raw).not.toContain(token.sanitized_key);
      expect(raw).not.toContain(TOKEN_BODY.real_key);
      // The webhook got it too.
      const [hook] = await receiver.waitFor(1);
      expect(JSON.parse(hook!.body).type).toBe('breach.detected');
      // No secret in any log line.
      const logs = h.logs.join('\n');
      for (const s of [token.sanitized_key, TOKEN_BODY.real_key, secret, secret.slice(6), h.apiKey])
        expect(logs).not.toContain(s);
      expect(logs).not.toContain('evil.example.net');
    });

    it('e-mails a breach summary with its attempts, origins and IP addresses', async () => {
      const h = await harness({ config: { smtpUrl: smtp.url } });
      await h.request('PATCH', '/v1/account', { alert_email: 'summary@example.com' });
      const token = (await h.request('POST', '/v1/tokens', TOKEN_BODY)).body;
      const before = smtp.messages.length;
      await h.events.publisher.publish({
        accountId: h.accountId,
        type: 'breach.detected',
        data: {
          token_id: token.token_id,
          summary: true,
          attempts: 57,
          reasons: { origin_not_allowed: 57 },
          origin_count: 2,
          origins: ['https://evil0.example.net', 'https://evil1.example.net'],
          ip_count: 57,
          ips: ['192.0.2.4', '192.0.2.5'],
          counts_capped: false,
          first_seen: '2026-03-10T12:00:00.000Z',
          last_seen: '2026-03-10T12:00:30.000Z',
        },
      });
      const mail = await until('the breach summary e-mail', () =>
        smtp.messages.slice(before).find((m) => m.to.includes('summary@example.com')),
      );
      const raw = decodeQuotedPrintable(mail.raw);
      expect(raw).toContain('refused 57 more requests');
      for (const part of [
        '2: https://evil0.example.net, https://evil1.example.net',
        '57, among them: 192.0.2.4, 192.0.2.5, …',
        'the origin is not in the token’s allowed hosts: 57',
        '2026-03-10T12:00:30.000Z',
        token.sanitized_key_hint,
      ])
        expect(raw, part).toContain(part);
      expect(raw).not.toContain(token.sanitized_key);
    });

    it('expires each token exactly once when several stores sweep at the same time', async () => {
      const h = await harness();
      const store = h.db.store;
      const past = new Date(Date.now() - 1000).toISOString();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const id = newTokenId();
        ids.push(id);
        await store.tokens.create({
          token: {
            id,
            accountId: h.accountId,
            name: `t${i}`,
            provider: 'openai',
            digest: newId('key'),
            hint: 'svc_hb_…',
            authorizedOrigins: ['a.example'],
            authorizedIps: [],
            rateLimit: null,
            expiresAt: past,
            createdAt: new Date(Date.now() - 5000).toISOString(),
          },
          key: {
            newKey: {
              id: newId('key'),
              accountId: h.accountId,
              name: 'k',
              provider: 'openai',
              hint: '',
              ciphertext: Buffer.alloc(8),
              createdAt: past,
            },
          },
          maxActiveTokens: null,
        });
      }
      // Separate connections pools, as separate processes would have. SQLite is one writer per file
      // and better-sqlite3 blocks while waiting, so there the concurrent calls share one store.
      const others =
        fixture.name === 'postgres'
          ? await Promise.all([1, 2].map(() => openStore({ database: h.db.database, dataDir: h.db.dataDir })))
          : [];
      try {
        const now = new Date().toISOString();
        const build = (t: { id: string; accountId: string }) => ({
          id: newId('event'),
          accountId: t.accountId,
          type: 'token.expired',
          createdAt: now,
          data: { token_id: t.id },
        });
        const results = await Promise.all(
          [store, ...others, store].flatMap((s) => [
            s.tokens.expireDue(now, 2, build),
            s.tokens.expireDue(now, 100, build),
          ]),
        );
        const expired = results.flat().map((t) => t.id);
        expect(new Set(expired).size).toBe(expired.length);
        await Promise.all(
          [store, ...others].map((s) => s.tokens.expireDue(new Date().toISOString(), 100, build)),
        );
        const events = (await store.events.list(h.accountId, { type: 'token.expired' }, { limit: 100 }))
          .items;
        expect(events.map((e) => e.data.token_id).sort()).toEqual([...ids].sort());
      } finally {
        await Promise.all(others.map((s) => s.close()));
      }
    });
  });
}
