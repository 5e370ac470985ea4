import { describe, expect, it } from 'vitest';
import { hasChromium } from '../support/chromium.js';
import { useDashboardHarness } from './dashboard-harness.js';
import { go, shoot } from './dashboard-pages.js';

/**
 * What a review found past the happy path: an account with more than one page of tokens, a sign-out
 * the server never hears, a clipboard the browser refuses.
 */
describe.skipIf(!hasChromium)('the dashboard in Chromium: long lists and failures', () => {
  const d = useDashboardHarness({ signedIn: true, seeded: false });

  it('an active token older than the newest 100 keeps its row, its Revoke buttons and the kill switch', async () => {
    const old = await d.createToken(d.apiKey, 'the old active one');
    // A breach with it, for the Anomalies view to name.
    expect((await d.proxy(old.sanitized_key, 'https://evil.example', '127.0.0.9')).status).toBe(403);
    for (let i = 0; i < 100; i++) {
      const t = await d.createToken(d.apiKey, `revoked ${i}`);
      expect((await d.api(d.apiKey, 'DELETE', `/v1/tokens/${t.token_id}`)).status).toBe(200);
    }
    await go(d.page, 'Tokens');
    const table = d.page.getByRole('table', { name: 'Tokens' });
    await table.getByRole('cell', { name: 'the old active one', exact: true }).waitFor();
    await d.page.getByRole('button', { name: 'Revoke the old active one' }).waitFor();
    expect(await d.page.getByRole('button', { name: 'Revoke all tokens' }).isDisabled()).toBe(false);

    await go(d.page, 'Anomalies');
    const anomalies = d.page.getByRole('table', { name: 'Anomalies' });
    await anomalies.getByRole('cell', { name: 'the old active one', exact: true }).waitFor();
    await anomalies.getByRole('button', { name: 'Revoke the old active one' }).waitFor();
    await shoot(d.page, 'anomalies-old-token-desktop');

    await go(d.page, 'Logs');
    // The filter's options come with the token list, a moment after the view.
    const option = d.page.getByLabel('Token').locator('option', { hasText: 'the old active one' });
    await option.waitFor({ state: 'attached' });
    expect(await option.count()).toBe(1);
  });

  it('a sign-out the server does not answer says so, and the page stays signed in', async () => {
    await go(d.page, 'Tokens');
    await d.page.route('**/v1/session', (route) =>
      route.request().method() === 'DELETE' ? route.abort('connectionrefused') : route.continue(),
    );
    try {
      await d.page.getByRole('button', { name: 'Sign out' }).click();
      await d.page.getByText(/^Not signed out: tokenproxy did not answer/).waitFor();
      await d.page.getByRole('heading', { name: 'Tokens' }).waitFor();
    } finally {
      await d.page.unroute('**/v1/session');
    }
    // Answered, it signs out as before.
    await d.page.getByRole('button', { name: 'Sign out' }).click();
    await d.page.getByLabel('API key').waitFor();
    await d.signIn(d.page, d.apiKey);
  });

  it('a token created while the clipboard is refused says to copy it by hand, never "Copied"', async () => {
    await go(d.page, 'Tokens');
    await d.page.evaluate(() => {
      Object.defineProperty(navigator, 'clipboard', {
        configurable: true,
        value: { writeText: () => Promise.reject(new Error('denied')) },
      });
    });
    await d.page.getByRole('button', { name: 'Create token' }).click();
    const dialog = d.page.getByRole('dialog', { name: 'Create a token' });
    await dialog.getByLabel('Name', { exact: true }).fill('clipboard refused');
    await dialog.getByLabel('Real key', { exact: true }).fill('sk-clipboard-refused-0000000000000');
    await dialog.getByLabel('Allowed hosts', { exact: true }).fill('app.example.com');
    await dialog.getByRole('button', { name: 'Create token' }).click();
    const shown = d.page.getByLabel('New sanitized token');
    await shown.waitFor();
    d.secrets.push(await shown.inputValue());
    await d.page.getByRole('button', { name: 'Copy', exact: true }).click();
    await d.page.getByText('The browser did not let the page copy it').waitFor();
    expect(await d.page.getByRole('button', { name: 'Copied' }).count()).toBe(0);
    await d.page.getByRole('button', { name: 'Done' }).click();
    await d.expectNoSecretsInBrowser(d.page);
  });
});
