import { describe, expect, it } from 'vitest';
import {
  AddressRefusedError,
  checkWebhookUrl,
  isForbiddenAddress,
  resolveDeliveryAddress,
  systemResolver,
} from '../../src/events/address-guard.js';
import { sendWebhook } from '../../src/events/webhook-sender.js';
import { startReceiver } from './support.js';

describe('webhook address guard', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['10.2.3.4', true],
    ['172.16.0.1', true],
    ['172.31.255.255', true],
    ['192.168.0.10', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['::1', true],
    ['::', true],
    ['fe80::1', true],
    ['fd00::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:10.0.0.1', true],
    ['64:ff9b::a9fe:a9fe', true], // NAT64 of 169.254.169.254
    ['64:ff9b:1::1', true],
    ['2002:7f00:1::', true], // 6to4 of 127.0.0.1
    ['2001:0:4136:e378::1', true], // Teredo
    ['::ffff:0:7f00:1', true], // SIIT
    ['fec0::1', true],
    ['8.8.8.8', false],
    ['172.32.0.1', false],
    ['203.0.113.10', false],
    ['2606:4700::1111', false],
  ])('%s forbidden: %s', (address, forbidden) => {
    expect(isForbiddenAddress(address)).toBe(forbidden);
  });

  it('checks URLs by their syntax: https only, no credentials, no private literals without the flag', () => {
    expect(checkWebhookUrl('https://hooks.example.com/x', false).ok).toBe(true);
    expect(checkWebhookUrl('http://hooks.example.com/x', false).ok).toBe(false);
    expect(checkWebhookUrl('http://127.0.0.1:9/x', true).ok).toBe(true);
    expect(checkWebhookUrl('https://localhost/x', false).ok).toBe(false);
    expect(checkWebhookUrl('https://a.localhost/x', false).ok).toBe(false);
    expect(checkWebhookUrl('https://[::1]/x', false).ok).toBe(false);
    expect(checkWebhookUrl('https://u:p@hooks.example.com/x', true).ok).toBe(false);
    expect(checkWebhookUrl('file:///etc/passwd', true).ok).toBe(false);
  });

  it('refuses a name that resolves to a private address, with any answer private', async () => {
    const url = new URL('https://rebind.example/x');
    const resolver = () =>
      Promise.resolve([
        { address: '203.0.113.5', family: 4 as const },
        { address: '127.0.0.1', family: 4 as const },
      ]);
    await expect(resolveDeliveryAddress(url, { allowPrivate: false, resolver })).rejects.toBeInstanceOf(
      AddressRefusedError,
    );
    await expect(resolveDeliveryAddress(url, { allowPrivate: false, resolver })).rejects.toMatchObject({
      code: 'address_refused',
    });
    await expect(resolveDeliveryAddress(url, { allowPrivate: true, resolver })).resolves.toEqual({
      address: '203.0.113.5',
      family: 4,
    });
  });

  it('never sends to localhost (resolved by the system) when the flag is off, and does when it is on', async () => {
    const receiver = await startReceiver();
    try {
      const event = {
        id: 'evt_x',
        accountId: 'acct_x',
        type: 'anomaly.detected',
        createdAt: new Date().toISOString(),
        data: {},
      };
      const url = `http://localhost:${receiver.port}/hook`;
      const base = { resolver: systemResolver, timeoutMs: 2000, userAgent: 'test' };
      const refused = await sendWebhook(url, Buffer.alloc(32), event, 1, { ...base, allowPrivate: false });
      expect(refused).toEqual({
        ok: false,
        error: expect.stringMatching(/^refused: /) as string,
        errorClass: 'refused',
      });
      expect(receiver.requests).toHaveLength(0);
      const sent = await sendWebhook(url, Buffer.alloc(32), event, 1, { ...base, allowPrivate: true });
      expect(sent).toEqual({ ok: true, statusCode: 200 });
      expect(receiver.requests).toHaveLength(1);
      expect(receiver.requests[0]?.headers.host).toBe(`localhost:${receiver.port}`);
    } finally {
      await receiver.close();
    }
  });

  it('refuses plain http at delivery once allow_private_webhooks is off, even for a public address', async () => {
    const event = {
      id: 'evt_y',
      accountId: 'acct_y',
      type: 'anomaly.detected',
      createdAt: new Date().toISOString(),
      data: {},
    };
    let resolved = 0;
    const resolver = () => {
      resolved++;
      return Promise.resolve([{ address: '203.0.113.5', family: 4 as const }]);
    };
    const result = await sendWebhook('http://hooks.example/x', Buffer.alloc(32), event, 1, {
      resolver,
      timeoutMs: 2000,
      userAgent: 'test',
      allowPrivate: false,
    });
    expect(result).toEqual({
      ok: false,
      error: 'refused: plain http is allowed only with allow_private_webhooks',
      errorClass: 'refused',
    });
    expect(resolved).toBe(0);
  });
});
