import { describe, expect, it } from 'vitest';
import { startReceiver } from '../events/support.js';
import { hasChromium } from '../support/chromium.js';
import { useDashboardHarness } from './dashboard-harness.js';
import { go } from './dashboard-pages.js';

describe.skipIf(!hasChromium)('the dashboard in Chromium: webhooks', () => {
  const d = useDashboardHarness({ signedIn: true, seeded: true });

  it('the Webhooks view lists endpoints with their recent deliveries and outcome', async () => {
    await go(d.page, 'Webhooks');
    const deliveries = d.page.getByRole('table', { name: 'Deliveries to https://127.0.0.1:9/tokenproxy' });
    await deliveries.getByRole('cell', { name: 'token.revoked' }).first().waitFor();
    // Nothing listens there: attempts fail and say why.
    await expect
      .poll(
        async () => {
          await d.page.reload();
          await deliveries.getByRole('cell', { name: 'token.revoked' }).first().waitFor();
          return deliveries.getByRole('row').filter({ hasText: 'token.revoked' }).first().textContent();
        },
        { timeout: 15_000 },
      )
      .toMatch(/pending|failed/);
  });

  it('the Webhooks view re-enables an endpoint, sends it a test and redelivers an event', async () => {
    const receiver = await startReceiver();
    try {
      const hook = await d.api(d.apiKey, 'POST', '/v1/webhooks', {
        url: receiver.url,
        events: ['token.revoked'],
      });
      expect(hook.status).toBe(201);
      d.secrets.push(String(hook.body.secret));
      const off = await d.api(d.apiKey, 'PATCH', `/v1/webhooks/${String(hook.body.webhook_id)}`, {
        enabled: false,
      });
      expect(off.status).toBe(200);
      await go(d.page, 'Webhooks');
      // The view may already be open from the test before: load the list with the new endpoint.
      await d.page.reload();
      const card = d.page.getByRole('article', { name: `Endpoint ${receiver.url}` });
      await card.getByRole('button', { name: `Re-enable ${receiver.url}` }).click();
      await card.getByRole('status').filter({ hasText: 'Endpoint enabled' }).waitFor();
      await card.getByRole('button', { name: `Send a test event to ${receiver.url}` }).click();
      await card.getByRole('status').filter({ hasText: 'Test event queued' }).waitFor();
      const [ping] = await receiver.waitFor(1);
      const eventId = String(ping?.headers['webhook-id']);
      expect(JSON.parse(ping?.body ?? '{}')).toMatchObject({ id: eventId, type: 'ping' });
      // The delivery shows up with its attempt: the receiver's status and how long it took.
      const table = card.getByRole('table', { name: `Deliveries to ${receiver.url}` });
      await expect
        .poll(
          async () => {
            await d.page.reload();
            return (await table.getByRole('row').filter({ hasText: 'ping' }).first().textContent()) ?? '';
          },
          { timeout: 15_000 },
        )
        .toMatch(/delivered.*200 · \d+ ms/);
      await table.getByRole('button', { name: `Redeliver ping ${eventId}` }).click();
      await card.getByRole('status').filter({ hasText: 'queued again' }).waitFor();
      const again = await receiver.waitFor(2);
      expect(again[1]?.headers['webhook-id']).toBe(eventId);
    } finally {
      await receiver.close();
    }
  });
});
