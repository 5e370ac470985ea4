import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { WebhookVerificationError, verifyWebhook } from '../../clients/node/src/index.js';
import { until } from '../support/poll.js';
import { client, tokenParams, useClientTestServer } from './node-support.js';

useClientTestServer();

describe('@tokenproxy/client against a real server', () => {
  it('webhooks: create (secret once), list, get, delete, and a real delivery verifies', async () => {
    const received: { body: string; headers: http.IncomingHttpHeaders }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push({ body, headers: req.headers });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const c = await client();
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const hook = await c.webhooks.create({ url, events: ['token.revoked'] });
      expect(hook.id).toMatch(/^wh_/);
      expect(hook.secret).toMatch(/^whsec_/);
      expect(hook.events).toEqual(['token.revoked']);
      const got = await c.webhooks.get(hook.id);
      expect(got).not.toHaveProperty('secret');
      expect(got.url).toBe(url);
      expect((await c.webhooks.list()).data.map((w) => w.id)).toEqual([hook.id]);

      const token = await c.tokens.create(tokenParams('watched'));
      await c.tokens.revoke(token.id);
      const delivery = await until('the webhook delivery', () => received[0], {
        timeoutMs: 20_000,
        everyMs: 100,
      });
      const event = verifyWebhook(delivery.body, delivery.headers, hook.secret);
      expect(event.type).toBe('token.revoked');
      expect(event.id).toBe(delivery.headers['webhook-id']);
      expect(event.data.tokenId ?? event.data.id).toBeDefined();
      expect(() => verifyWebhook(`${delivery.body} `, delivery.headers, hook.secret)).toThrow(
        WebhookVerificationError,
      );

      const events = await c.events.list({ type: 'token.revoked' });
      expect(events.data.map((e) => e.id)).toContain(event.id);
      // The delivery's outcome, as the dashboard's Webhooks view shows it.
      let deliveries = await c.webhooks.deliveries(hook.id);
      for (let i = 0; i < 50 && deliveries.data[0]?.status !== 'delivered'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        deliveries = await c.webhooks.deliveries(hook.id);
      }
      expect(deliveries.data[0]).toMatchObject({
        eventId: event.id,
        eventType: 'token.revoked',
        status: 'delivered',
      });
      expect(deliveries.data[0]?.id).toMatch(/^\S+$/);
      const deleted = await c.webhooks.delete(hook.id);
      expect(deleted.id).toBe(hook.id);
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
});

describe('verifyWebhook', () => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const payload = JSON.stringify({
    id: 'evt_1',
    type: 'token.revoked',
    created_at: '2030-01-01T00:00:00.000Z',
    data: { token_id: 'abc' },
  });
  const sign = (id: string, ts: number, body: string, key = secret) =>
    createHmac('sha256', Buffer.from(key.slice('whsec_'.length), 'base64'))
      .update(`${id}.${ts}.${body}`)
      .digest('base64');
  const now = () => Math.floor(Date.now() / 1000);

  it('accepts a correctly signed payload (Standard Webhooks) and returns the camelCased event', () => {
    const ts = now();
    const headers = {
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(ts),
      'webhook-signature': `v1,${sign('evt_1', ts, payload)}`,
    };
    const event = verifyWebhook(payload, headers, secret);
    expect(event).toEqual({
      id: 'evt_1',
      type: 'token.revoked',
      createdAt: '2030-01-01T00:00:00.000Z',
      data: { tokenId: 'abc' },
    });
    expect(verifyWebhook(Buffer.from(payload), new Headers(headers), secret).id).toBe('evt_1');
  });

  it('agrees with the standardwebhooks reference implementation', () => {
    const ts = new Date();
    const signature = new StandardWebhook(secret).sign('msg_1', ts, payload);
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(ts.getTime() / 1000)),
      'webhook-signature': signature,
    };
    expect(verifyWebhook(payload, headers, secret).type).toBe('token.revoked');
  });

  it('accepts one valid signature among several, and refuses tampering, other secrets, stale or future timestamps', () => {
    const ts = now();
    const good = sign('evt_1', ts, payload);
    const other = `whsec_${randomBytes(24).toString('base64')}`;
    const h = (sig: string, t = ts, id = 'evt_1') => ({
      'webhook-id': id,
      'webhook-timestamp': String(t),
      'webhook-signature': sig,
    });
    expect(verifyWebhook(payload, h(`v1,${sign('evt_1', ts, payload, other)} v1,${good}`), secret).id).toBe(
      'evt_1',
    );
    const refuse = (body: string, headers: Record<string, string>) =>
      expect(() => verifyWebhook(body, headers, secret)).toThrow(WebhookVerificationError);
    refuse(payload.replace('abc', 'abd'), h(`v1,${good}`));
    refuse(payload, h(`v1,${good}`, ts, 'evt_2'));
    refuse(payload, h(`v1,${sign('evt_1', ts, payload, other)}`));
    refuse(payload, h(`v2,${good}`));
    refuse(payload, h(`v1,${sign('evt_1', ts - 301, payload)}`, ts - 301));
    refuse(payload, h(`v1,${sign('evt_1', ts + 301, payload)}`, ts + 301));
    refuse(payload, { 'webhook-id': 'evt_1' });
    // Within the 5-minute tolerance.
    expect(verifyWebhook(payload, h(`v1,${sign('evt_1', ts - 290, payload)}`, ts - 290), secret).id).toBe(
      'evt_1',
    );
  });
});
