/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-non-null-assertion, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-explicit-any --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.js';
import { databases } from '../support/databases.js';
import { until } from '../support/poll.js';
import { rawQuery } from '../store/helpers.js';
import { startEventsHarness, startReceiver, type EventsHarness, type Receiver } from './support.js';

function headersOf(r: { headers: Record<string, string | string[] | undefined> }): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
    out[name] = String(r.headers[name]);
  return out;
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(
    `webhook tooling: test, attempts, re-enable, redeliver (${fixture.name})`,
    () => {
      let receiver: Receiver;
      let h: EventsHarness;
      beforeAll(async () => {
        receiver = await startReceiver();
        h = await startEventsHarness(fixture);
      });
      afterEach(() => {
        receiver.requests.length = 0;
        receiver.script([], 200);
      });
      afterAll(async () => {
        await h.close();
        await receiver.close();
      });

      async function addWebhook(events: string[] = ['*']): Promise<{ id: string; secret: string }> {
        const res = await h.request('POST', '/v1/webhooks', { url: receiver.url, events });
        expect(res.status).toBe(201);
        return { id: res.body.webhook_id, secret: res.body.secret };
      }
      const deliveries = async (id: string) =>
        (await h.request('GET', `/v1/webhooks/${id}/deliveries`)).body.data;

      it('POST /test sends a signed ping through the outbox; the delivery lists its attempt, no body', async () => {
        const { id, secret } = await addWebhook(['token.revoked']);
        const res = await h.request('POST', `/v1/webhooks/${id}/test`);
        expect(res.status).toBe(202);
        expect(res.body.event_id).toMatch(/^evt_/);
        expect(res.body.delivery_id).toMatch(/^dlv_/);
        const [req] = await receiver.waitFor(1);
        const verified = new Webhook(secret).verify(req!.body, headersOf(req!)) as Record<string, unknown>;
        expect(verified).toMatchObject({ id: res.body.event_id, type: 'ping', data: { webhook_id: id } });
        expect(req!.headers['webhook-id']).toBe(res.body.event_id);
        // Listed like any event, and found by its type.
        const listed = await h.request('GET', '/v1/events?type=ping');
        expect(listed.status).toBe(200);
        expect(listed.body.data.map((e: any) => e.id ?? e.event_id)).toContain(res.body.event_id);

        const [delivery] = await until('the ping delivery to be listed as delivered', async () => {
          const list = await deliveries(id);
          return list[0]?.status === 'delivered' ? list : undefined;
        });
        expect(delivery).toMatchObject({
          delivery_id: res.body.delivery_id,
          event_type: 'ping',
          attempts: 1,
        });
        expect(delivery.attempt_log).toHaveLength(1);
        expect(delivery.attempt_log[0]).toMatchObject({ attempt: 1, status_code: 200, error_class: null });
        expect(delivery.attempt_log[0].duration_ms).toBeGreaterThanOrEqual(0);
        expect(Date.parse(delivery.attempt_log[0].attempted_at)).not.toBeNaN();
        expect(Object.keys(delivery.attempt_log[0]).sort()).toEqual(
          ['attempt', 'attempted_at', 'duration_ms', 'error_class', 'status_code'].sort(),
        );
      });

      it('every attempt is listed with its time, status code, duration and error class', async () => {
        const { id } = await addWebhook();
        receiver.script([503, 'drop'], 200);
        const res = await h.request('POST', `/v1/webhooks/${id}/test`);
        expect(res.status).toBe(202);
        await receiver.waitFor(3, 15_000);
        const [delivery] = await until(
          'the retried ping delivery to be listed as delivered',
          async () => {
            const list = await deliveries(id);
            return list[0]?.status === 'delivered' ? list : undefined;
          },
          { timeoutMs: 15_000 },
        );
        expect(delivery.attempts).toBe(3);
        expect(delivery.attempt_log.map((a: any) => [a.attempt, a.status_code, a.error_class])).toEqual([
          [1, 503, 'http_status'],
          [2, null, 'connection'],
          [3, 200, null],
        ]);
        const times = delivery.attempt_log.map((a: any) => Date.parse(a.attempted_at));
        expect(times[1]).toBeGreaterThan(times[0]);
        expect(times[2]).toBeGreaterThan(times[1]);
      });

      it('PATCH enabled false stops deliveries, true re-enables and clears failing_since', async () => {
        const { id } = await addWebhook();
        const off = await h.request('PATCH', `/v1/webhooks/${id}`, { enabled: false });
        expect(off.status).toBe(200);
        expect(off.body.disabled_at).not.toBeNull();
        expect(off.body.disabled_reason).toMatch(/Disabled through the API/);
        const refused = await h.request('POST', `/v1/webhooks/${id}/test`);
        expect(refused.status).toBe(409);
        expect(refused.body.error).toMatchObject({ code: 'webhook_disabled', param: 'id' });
        expect(refused.body.error.message).toMatch(/PATCH \/v1\/webhooks\/.*"enabled": true/);

        // As after tokenproxy disabled it itself: a failing streak is on record.
        await rawQuery(
          fixture.name,
          h.db,
          'update webhooks set disabled_at = ?, disabled_reason = ?, failing_since = ? where id = ?',
          ['2026-01-02T00:00:00.000Z', 'every attempt failed', '2026-01-01T00:00:00.000Z', id],
        );
        const on = await h.request('PATCH', `/v1/webhooks/${id}`, { enabled: true });
        expect(on.status).toBe(200);
        expect(on.body).toMatchObject({
          webhook_id: id,
          disabled_at: null,
          disabled_reason: null,
          failing_since: null,
        });
        expect((await h.request('POST', `/v1/webhooks/${id}/test`)).status).toBe(202);
        await receiver.waitFor(1);

        expect((await h.request('PATCH', `/v1/webhooks/${id}`, { enabled: 'yes' })).status).toBe(400);
        const unknownField = await h.request('PATCH', `/v1/webhooks/${id}`, { url: 'https://x.test/' });
        expect(unknownField.status).toBe(400);
        expect(
          (await h.request('PATCH', '/v1/webhooks/wh_1111111111111111111111', { enabled: true })).body.error
            .code,
        ).toBe('webhook_not_found');
      });

      it('POST /v1/events/:id/redeliver sends the same event again, to one endpoint or to its subscribers', async () => {
        const all = await addWebhook(['*']);
        const revokedOnly = await addWebhook(['token.revoked']);
        const ping = await h.request('POST', `/v1/webhooks/${all.id}/test`);
        const eventId = ping.body.event_id as string;
        await receiver.waitFor(1);
        receiver.requests.length = 0;

        // To its subscribers: a ping goes to "*" endpoints only (and any other "*" endpoint of earlier tests).
        const again = await h.request('POST', `/v1/events/${eventId}/redeliver`);
        expect(again.status).toBe(202);
        expect(again.body.event_id).toBe(eventId);
        const targets = again.body.deliveries.map((d: any) => d.webhook_id);
        expect(targets).toContain(all.id);
        expect(targets).not.toContain(revokedOnly.id);
        const sent = await receiver.waitFor(targets.length);
        expect(sent.every((r) => r.headers['webhook-id'] === eventId)).toBe(true);
        receiver.requests.length = 0;

        // To one endpoint, even one not subscribed to the type.
        const one = await h.request('POST', `/v1/events/${eventId}/redeliver?webhook_id=${revokedOnly.id}`);
        expect(one.status).toBe(202);
        expect(one.body.deliveries).toEqual([
          { delivery_id: expect.stringMatching(/^dlv_/), webhook_id: revokedOnly.id },
        ]);
        const [req] = await receiver.waitFor(1);
        expect(new Webhook(revokedOnly.secret).verify(req!.body, headersOf(req!))).toMatchObject({
          id: eventId,
        });
        const history = await until("the redelivery in the endpoint's delivery list", async () => {
          const list = await deliveries(revokedOnly.id);
          return list.some((d: any) => d.event_id === eventId && d.status === 'delivered') ? list : undefined;
        });
        expect(history.filter((d: any) => d.event_id === eventId)).toHaveLength(1);

        expect(
          (await h.request('POST', '/v1/events/evt_1111111111111111111111/redeliver')).body.error.code,
        ).toBe('event_not_found');
        const bad = await h.request(
          'POST',
          `/v1/events/${eventId}/redeliver?webhook_id=wh_1111111111111111111111`,
        );
        expect(bad.status).toBe(404);
        expect(bad.body.error).toMatchObject({ code: 'webhook_not_found', param: 'webhook_id' });
        // Another account sees neither the event nor the endpoints.
        const other = await createAccount(h.db.store, 'other', 'free', new Date());
        const theirs = await h.request('POST', `/v1/events/${eventId}/redeliver`, undefined, other.apiKey);
        expect(theirs.body.error.code).toBe('event_not_found');
        expect((await h.request('POST', `/v1/webhooks/${all.id}/test`, undefined, other.apiKey)).status).toBe(
          404,
        );
      });

      it('the audit log records the test, re-enable and redeliver actions, by endpoint or event id', async () => {
        const audit = (await h.request('GET', '/v1/audit?limit=100')).body.data as Array<{
          action: string;
          object_id: string | null;
        }>;
        const actions = new Set(audit.map((e) => e.action));
        for (const action of ['webhook.tested', 'webhook.updated', 'event.redelivered']) {
          expect(actions).toContain(action);
        }
        for (const e of audit.filter((x) => x.action === 'event.redelivered'))
          expect(e.object_id).toMatch(/^evt_/);
        for (const e of audit.filter((x) => x.action === 'webhook.tested'))
          expect(e.object_id).toMatch(/^wh_/);
      });
    },
  );
}
