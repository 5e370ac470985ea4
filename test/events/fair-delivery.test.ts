/* eslint-disable @typescript-eslint/no-unsafe-member-access --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.js';
import { databases } from '../support/databases.js';
import { until } from '../support/poll.js';
import {
  startEventsHarness,
  startReceiver,
  startSmtpSink,
  type EventsHarness,
  type Receiver,
  type SmtpSink,
} from './support.js';

const SLOW_ENDPOINTS = 16;

async function addWebhook(h: EventsHarness, url: string, events: string[], apiKey?: string): Promise<void> {
  const res = await h.request('POST', '/v1/webhooks', { url, events }, apiKey);
  expect(res.status).toBe(201);
}

function breach(accountId: string, ip: string) {
  return {
    accountId,
    type: 'breach.detected' as const,
    data: {
      token_id: 'tok_x',
      origin: 'https://evil.example.net',
      ip,
      country: null,
      path: '/openai/v1/models',
      reason: 'origin_not_allowed',
      attempts: 1,
    },
  };
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`fair delivery scheduling (${fixture.name})`, () => {
    let slow: Receiver;
    let fast: Receiver;
    let smtp: SmtpSink;
    beforeAll(async () => {
      [slow, fast, smtp] = await Promise.all([startReceiver(), startReceiver(), startSmtpSink()]);
    });
    afterAll(async () => {
      await Promise.all([slow.close(), fast.close(), smtp.close()]);
    });

    it('hanging endpoints of one account delay neither another account’s breach webhook nor its e-mail', async () => {
      // Attempts would hang for 20 s; the test is over long before unless the other account waits.
      const h = await startEventsHarness(fixture, {
        config: { smtpUrl: smtp.url, webhookRetrySchedule: [] },
        deliveryTimeoutMs: 20_000,
      });
      try {
        slow.script([], 'hang');
        for (let i = 0; i < SLOW_ENDPOINTS; i++) await addWebhook(h, `${slow.url}?endpoint=${i}`, ['*']);
        await h.request('PATCH', '/v1/account', { alert_email: 'flooded@example.com' });
        // 4 events × 16 endpoints = 64 webhook deliveries that hang, half of them breach alerts.
        for (let k = 0; k < 2; k++) {
          await h.events.publisher.publish(breach(h.accountId, `198.51.100.${k + 1}`));
          await h.events.publisher.publish({ accountId: h.accountId, type: 'anomaly.detected', data: { k } });
        }
        await until('six attempts hanging at the slow endpoints', () => slow.hanging >= 6);

        const other = await createAccount(h.db.store, 'other', 'unlimited', new Date());
        await h.request('PATCH', '/v1/account', { alert_email: 'other@example.com' }, other.apiKey);
        await addWebhook(h, fast.url, ['breach.detected'], other.apiKey);
        await h.events.publisher.publish(breach(other.account.id, '203.0.113.9'));

        const [hook] = await fast.waitFor(1, 15_000);
        expect(JSON.parse(hook?.body ?? '{}').data.ip).toBe('203.0.113.9');
        await until(
          "the other account's breach alert e-mail",
          () => smtp.messages.some((m) => m.to.includes('other@example.com')),
          { timeoutMs: 15_000 },
        );
        // Both arrived while every attempt at the hanging endpoints was still waiting for an answer.
        expect(slow.abandoned).toBe(0);
        // The flooded account holds its share only: 2 breach-lane and 4 webhook-lane slots, and at
        // most 2 attempts per endpoint.
        expect(slow.hanging).toBeLessThanOrEqual(6);
        const perEndpoint = new Map<string, number>();
        for (const r of slow.requests) perEndpoint.set(r.url, (perEndpoint.get(r.url) ?? 0) + 1);
        expect(Math.max(...perEndpoint.values())).toBeLessThanOrEqual(2);
      } finally {
        slow.releaseHanging();
        slow.script([], 200);
        await h.close();
      }
    }, 60_000);
  });
}
