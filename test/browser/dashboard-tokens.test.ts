import { describe, expect, it } from 'vitest';
import { hasChromium } from '../support/chromium.js';
import { ALLOWED, REAL_KEY, XSS_NAME, useDashboardHarness } from './dashboard-harness.js';
import { go, shoot } from './dashboard-pages.js';

describe.skipIf(!hasChromium)('the dashboard in Chromium: tokens', () => {
  const d = useDashboardHarness({ signedIn: true, seeded: false });

  it("the tokens table shows only this account's tokens, and a markup name as text that never runs", async () => {
    await d.createToken(d.apiKey, XSS_NAME);
    await d.createToken(d.apiKey, 'web app, production');
    await d.createToken(d.otherKey, 'someone else’s token');
    await go(d.page, 'Tokens');
    const table = d.page.getByRole('table', { name: 'Tokens' });
    await table.getByRole('cell', { name: XSS_NAME, exact: true }).waitFor();
    await table.getByRole('cell', { name: 'web app, production', exact: true }).waitFor();
    expect(await table.getByText('someone else’s token').count()).toBe(0);
    expect(await d.page.locator('img[src="x"]').count()).toBe(0);
    expect(await d.page.evaluate<number | null>('window.__xss ?? null')).toBeNull();
    await d.expectNoSecretsInBrowser(d.page);
  });

  it('creates a token: the sanitized key is shown once with a copy button, and is gone after Done', async () => {
    await d.page.getByRole('button', { name: 'Create token' }).click();
    const dialog = d.page.getByRole('dialog', { name: 'Create a token' });
    await dialog.getByLabel('Name', { exact: true }).fill('checkout widget');
    await dialog.getByLabel('Real key', { exact: true }).fill(REAL_KEY);
    await dialog.getByLabel('Allowed hosts', { exact: true }).fill('checkout.example.com');
    await dialog.getByRole('button', { name: 'Create token' }).click();
    const shown = d.page.getByLabel('New sanitized token');
    await shown.waitFor();
    const key = await shown.inputValue();
    expect(key).toMatch(/^svc_hb_[1-9A-HJ-NP-Za-km-z]{43}$/);
    await d.page.getByRole('button', { name: 'Copy', exact: true }).waitFor();
    await shoot(d.page, 'tokens-created-desktop');
    await d.page.getByRole('button', { name: 'Done' }).click();
    d.secrets.push(key);
    await d.page
      .getByRole('table', { name: 'Tokens' })
      .getByRole('cell', { name: 'checkout widget', exact: true })
      .waitFor();
    await d.expectNoSecretsInBrowser(d.page);
  });

  it('edits a token: allowed hosts and rate limit, effective on the next request', async () => {
    const t = await d.createToken(d.apiKey, 'editable');
    await d.page.reload();
    const row = d.page
      .getByRole('row')
      .filter({ has: d.page.getByRole('cell', { name: 'editable', exact: true }) });
    await row.getByRole('button', { name: 'Edit', exact: true }).click();
    const dialog = d.page.getByRole('dialog', { name: 'Edit editable' });
    // Not exact: a label around a filled field takes the field's value into its accessible name.
    await dialog.getByLabel('Allowed hosts').fill('other.example.com');
    await dialog.getByLabel('Rate limit (requests)').fill('100');
    await dialog.getByLabel('Per window').fill('1m');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await d.page.getByText('Saved editable').waitFor();
    const stored = await d.api(d.apiKey, 'GET', `/v1/tokens/${t.token_id}`);
    expect(stored.body).toMatchObject({
      authorized_origins: ['other.example.com'],
      rate_limit: { requests: 100, window: '1m' },
    });
    expect((await d.proxy(t.sanitized_key, ALLOWED, '127.0.0.2')).status).toBe(403);
    expect((await d.proxy(t.sanitized_key, 'https://other.example.com', '127.0.0.2')).status).toBe(200);
  });

  it('an edit keeps the expiry to the millisecond unless changed; an ended token stays editable but not its expiry', async () => {
    const t = await d.createToken(d.apiKey, 'keeps its expiry');
    const expiresAt = '2099-01-02T03:04:05.678Z';
    expect(
      (await d.api(d.apiKey, 'PATCH', `/v1/tokens/${t.token_id}`, { expires_at: expiresAt })).status,
    ).toBe(200);
    await d.page.reload();
    const edit = async (from: string, to: string) => {
      const row = d.page
        .getByRole('row')
        .filter({ has: d.page.getByRole('cell', { name: from, exact: true }) });
      await row.getByRole('button', { name: 'Edit', exact: true }).click();
      const dialog = d.page.getByRole('dialog', { name: `Edit ${from}` });
      await dialog.getByLabel('Name', { exact: true }).fill(to);
      return dialog;
    };
    let dialog = await edit('keeps its expiry', 'renamed, same expiry');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await d.page.getByText('Saved renamed, same expiry').waitFor();
    // The field holds minutes: sent back unchanged it would have cut the seconds.
    expect((await d.api(d.apiKey, 'GET', `/v1/tokens/${t.token_id}`)).body.expires_at).toBe(expiresAt);

    expect((await d.api(d.apiKey, 'DELETE', `/v1/tokens/${t.token_id}`)).status).toBe(200);
    await d.page.reload();
    dialog = await edit('renamed, same expiry', 'renamed once revoked');
    expect(await dialog.getByLabel('Expires').isDisabled()).toBe(true);
    await dialog.getByText('This token is revoked: an ended token stays ended.').waitFor();
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await d.page.getByText('Saved renamed once revoked').waitFor();
    const stored = (await d.api(d.apiKey, 'GET', `/v1/tokens/${t.token_id}`)).body;
    expect([stored.name, stored.status, stored.expires_at]).toEqual([
      'renamed once revoked',
      'revoked',
      expiresAt,
    ]);
  });

  it('revokes with confirmation: then the proxy answers 401 token_revoked and one token.revoked event exists', async () => {
    const t = await d.createToken(d.apiKey, 'to revoke');
    expect((await d.proxy(t.sanitized_key, ALLOWED)).status).toBe(200);
    await d.page.reload();
    await d.page.getByRole('button', { name: 'Revoke to revoke' }).click();
    const dialog = d.page.getByRole('dialog', { name: 'Revoke this token?' });
    await shoot(d.page, 'tokens-revoke-confirm-desktop');
    await dialog.getByRole('button', { name: 'Revoke token' }).click();
    await d.page.getByText('Revoked to revoke.').waitFor();
    const refused = await d.proxy(t.sanitized_key, ALLOWED, '127.0.0.3');
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'token_revoked' } });
    const events = await d.api(d.apiKey, 'GET', '/v1/events?type=token.revoked&limit=100');
    expect(
      events.body.data.filter((e) => (e.data as { token_id: string }).token_id === t.token_id),
    ).toHaveLength(1);
  });

  it('Settings shows the audit log: the dashboard\'s changes by "dashboard session", the API\'s by key name', async () => {
    await d.createToken(d.apiKey, 'audited via api');
    await go(d.page, 'Settings');
    const table = d.page.getByRole('table', { name: 'Audit log entries' });
    const dashboardRevoke = table
      .getByRole('row')
      .filter({ hasText: 'token.revoked' })
      .filter({ hasText: 'dashboard session' });
    await dashboardRevoke.first().waitFor();
    const apiCreate = table
      .getByRole('row')
      .filter({ hasText: 'token.created' })
      .filter({ hasText: 'API key "default"' });
    await apiCreate.first().waitFor();
    await d.page.getByLabel('Action').selectOption('token.revoked');
    await table.getByRole('row').filter({ hasText: 'token.created' }).first().waitFor({ state: 'detached' });
    expect(await table.getByRole('row').filter({ hasText: 'token.revoked' }).count()).toBeGreaterThan(0);
    await shoot(d.page, 'settings-audit-desktop');
    await d.expectNoSecretsInBrowser(d.page);
  });

  it('the kill switch is confirmed by typing the account name', async () => {
    await go(d.page, 'Tokens');
    await d.page.getByRole('button', { name: 'Revoke all tokens' }).click();
    const dialog = d.page.getByRole('dialog', { name: 'Revoke all tokens?' });
    const confirm = dialog.getByRole('button', { name: 'Revoke all tokens' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Type Acme Security to confirm').fill('Acme');
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Type Acme Security to confirm').fill('Acme Security');
    await confirm.click();
    await d.page.getByText(/^Revoked \d+ tokens?\.$/).waitFor();
    const active = await d.api(d.apiKey, 'GET', '/v1/tokens?status=active');
    expect(active.body.data).toEqual([]);
  });
});
