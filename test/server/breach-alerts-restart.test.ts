import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeQuotedPrintable } from '../events/support.js';
import { startServe, type ServerProcess } from '../support/cli.js';
import { alertClient, startAlertWorld, type AlertWorld } from './breach-alerts-support.js';

const ADDRESSES = 10;

/**
 * A server stopped in the middle of an attack still announces it: the alerts its caps held back for
 * the end of the minute are committed to the outbox at shutdown, and sent then or by the next start.
 */
describe('the real binary: alerts held back when the server stops are sent, not lost', () => {
  let world: AlertWorld;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    world = await startAlertWorld('alerts-restart');
    server = await startServe([...world.args]);
  });

  afterAll(async () => {
    await server?.stop();
    await world?.close();
  });

  it('10 refused requests from 10 addresses, then SIGTERM within the minute: 3 alerts and the summary of 7, once', async () => {
    const { smtp } = world;
    const running = server as ServerProcess;
    const client = await alertClient(running, world.dataDir);
    let attackStarted = 0;
    try {
      const token = await client.attackedToken('attacked');
      attackStarted = Date.now();
      await client.refuseFrom(token, ADDRESSES);
      await smtp.waitFor(3, 30_000);
    } finally {
      await client.close();
    }
    // Well inside the minute, so the summary is still held back when the server stops (past it,
    // the running server would have sent it and this test would prove nothing).
    expect(Date.now() - attackStarted).toBeLessThan(45_000);
    expect(smtp.messages).toHaveLength(3);
    expect(await running.stop()).toBe(0);
    // The summary is committed at shutdown; the stopping server's delivery worker may still send it,
    // else the next start does. Either way it arrives, once.
    server = await startServe([...world.args]);
    const mails = await smtp.waitFor(4, 30_000);
    const summary = decodeQuotedPrintable(mails[3]?.raw ?? '');
    expect(summary).toContain('refused 7 more requests');
    expect(summary).toContain('192.0.2.4');
    await new Promise((r) => setTimeout(r, 3_000));
    expect(smtp.messages).toHaveLength(4);
  }, 120_000);
});
