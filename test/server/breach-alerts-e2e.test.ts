import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeQuotedPrintable } from '../events/support.js';
import { startServe, type ServerProcess } from '../support/cli.js';
import { alertClient, startAlertWorld, type AlertClient, type AlertWorld } from './breach-alerts-support.js';

const ADDRESSES = 60;

describe('the real binary: rotating client addresses cannot flood the alert inbox', () => {
  let world: AlertWorld;
  let server: ServerProcess;
  let client: AlertClient;

  beforeAll(async () => {
    world = await startAlertWorld('alerts');
    server = await startServe([...world.args]);
    client = await alertClient(server, world.dataDir);
  });

  afterAll(async () => {
    await client?.close();
    await server?.stop();
    await world?.close();
  });

  it('60 refused requests from 60 addresses: 3 alert e-mails, then one summary of the other 57', async () => {
    const { smtp } = world;
    const token = await client.attackedToken('rotated');
    await client.refuseFrom(token, ADDRESSES);
    // The summary leaves when the minute of the capped alerts is over (plus the flush and the poll).
    const mails = await smtp.waitFor(4, 100_000);
    const texts = mails.map((m) => decodeQuotedPrintable(m.raw));
    // The first three, in whatever order the e-mail lane sent them.
    const first = texts.slice(0, 3);
    for (const n of [1, 2, 3]) {
      const ip = new RegExp(`192\\.0\\.2\\.${n}(?!\\d)`);
      expect(
        first.filter((text) => ip.test(text)),
        `192.0.2.${n}`,
      ).toHaveLength(1);
    }
    const summary = texts[3] ?? '';
    expect(summary).toContain('refused 57 more requests');
    expect(summary).toContain('57, among them: 192.0.2.4, 192.0.2.5');
    expect(summary).toContain('1: https://evil.example');
    expect(summary).not.toContain(token);
    // Nothing else was sent for these 60 requests.
    expect(smtp.messages).toHaveLength(4);
  }, 150_000);
});
