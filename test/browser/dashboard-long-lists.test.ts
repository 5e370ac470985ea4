import { describe, expect, it } from 'vitest';
import { hasChromium } from '../support/chromium.js';
import { ALLOWED, useDashboardHarness } from './dashboard-harness.js';
import { go, shoot } from './dashboard-pages.js';

/**
 * What a review found past the happy path: an account with more than one page of tokens, a sign-out
 * the server never hears, a clipboard the browser refuses, a filtered view reloaded or linked.
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

  it('the Anomalies view pages older and back, and another token starts on its newest page without the old cursor', async () => {
    const paged = await d.createToken(d.apiKey, 'paged anomalies');
    const other = await d.createToken(d.apiKey, 'other anomalies');
    const account = String((await d.api(d.apiKey, 'GET', '/v1/account')).body.account_id);
    const t0 = Date.now() - 3_600_000;
    const entry = (tokenId: string, i: number, path: string) => ({
      id: `req_paging_${tokenId.slice(0, 8)}_${i}`,
      accountId: account,
      tokenId,
      timestamp: new Date(t0 + i * 1_000).toISOString(),
      origin: 'https://evil.example',
      ip: `198.51.100.${i + 1}`,
      country: null,
      path,
      reason: 'origin_not_allowed' as const,
      kind: 'breach' as const,
      details: null,
    });
    // 60 entries: a page of 50 and one of 10, newest first.
    await d.server.store.anomalies.insertMany(
      Array.from({ length: 60 }, (_, i) => entry(paged.token_id, i, `/openai/v1/paged-${i}`)),
    );
    await d.server.store.anomalies.insertMany([entry(other.token_id, 0, '/openai/v1/the-other-one')]);
    const asked: string[] = [];
    d.page.on('request', (r) => {
      if (r.url().includes('/v1/anomalies')) asked.push(r.url());
    });
    await d.page.goto(`${d.server.apiUrl}/anomalies?token_id=${paged.token_id}`);
    const table = d.page.getByRole('table', { name: 'Anomalies' });
    const cell = (text: string) => table.getByText(text, { exact: true });
    await cell('/openai/v1/paged-59').waitFor();
    expect(await table.getByRole('row').count()).toBe(51); // the heading and 50
    await d.page.getByRole('button', { name: 'Older' }).click();
    await cell('/openai/v1/paged-9').waitFor();
    await d.page.getByText('Page 2', { exact: true }).waitFor();
    expect(await table.getByRole('row').count()).toBe(11);
    expect(await d.page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await d.page.getByRole('button', { name: 'Newest' }).click();
    await cell('/openai/v1/paged-59').waitFor();

    await d.page.getByRole('button', { name: 'Older' }).click();
    await cell('/openai/v1/paged-9').waitFor();
    // Another token, chosen on the second page: its newest page, asked for without the old cursor.
    await d.page.getByLabel('Token').selectOption(other.token_id);
    await cell('/openai/v1/the-other-one').waitFor();
    expect(await table.getByRole('row').count()).toBe(2);
    expect(await d.page.getByText('Page 2', { exact: true }).count()).toBe(0);
    const forOther = asked.filter((url) => url.includes(other.token_id));
    expect(forOther.length).toBeGreaterThan(0);
    expect(forOther.filter((url) => url.includes('cursor='))).toEqual([]);
  });

  it('the audit log pages older, and another action starts on its newest page without the old cursor', async () => {
    // 30 token.create entries: more than the audit log's page of 25.
    for (let i = 0; i < 30; i++) await d.createToken(d.apiKey, `audited ${i}`);
    const asked: string[] = [];
    d.page.on('request', (r) => {
      if (r.url().includes('/v1/audit')) asked.push(r.url());
    });
    await go(d.page, 'Settings');
    const audit = (has: string) => (r: { url(): string }) =>
      r.url().includes('/v1/audit') && r.url().includes(has);
    // The pager shows "Page 2" as soon as it is clicked; the request follows.
    await Promise.all([
      d.page.waitForRequest(audit('cursor=')),
      d.page.getByRole('button', { name: 'Older' }).click(),
    ]);
    await d.page.getByText('Page 2', { exact: true }).waitFor();
    const before = asked.length;
    await Promise.all([
      d.page.waitForRequest(audit('action=')),
      d.page.getByRole('form', { name: 'Audit filters' }).getByRole('combobox').selectOption({ index: 2 }),
    ]);
    await d.page.getByText('Page 2', { exact: true }).waitFor({ state: 'detached' });
    const after = asked.slice(before);
    expect(after.filter((url) => url.includes('action='))).not.toEqual([]);
    expect(after.filter((url) => url.includes('cursor='))).toEqual([]);
  });

  it('the Logs view keeps its filters in the address: a reload, a link and Back keep what was chosen', async () => {
    await go(d.page, 'Logs');
    const t = await d.createToken(d.apiKey, 'filtered in the logs');
    expect((await d.proxy(t.sanitized_key, ALLOWED, '127.0.0.11')).status).toBe(200);
    expect((await d.proxy(t.sanitized_key, 'https://evil.example', '127.0.0.12')).status).toBe(403);
    // The log writer stores records a moment after their answers; the view reads them once.
    for (let i = 0; ; i++) {
      const logs = await d.api(d.apiKey, 'GET', `/v1/logs?token_id=${t.token_id}`);
      if ((logs.body.data as unknown[]).length === 2) break;
      expect(i, 'both requests recorded').toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const table = d.page.getByRole('table', { name: 'Request log' });
    const shows = async (status: number) => {
      // A refused request's cell reads "403 refused".
      const cell = table.getByRole('cell', { name: new RegExp(`^${status}( refused)?$`) });
      await cell.waitFor();
      // The list of the filters before may still be shown (its cell too): wait until it is replaced.
      await table.getByRole('row').nth(2).waitFor({ state: 'detached' });
      expect(await table.getByRole('row').count()).toBe(2); // the heading and the one request
      expect(await cell.count()).toBe(1);
    };

    // Its own link, clicked while it is shown, reads it afresh: the new token is among the options.
    await go(d.page, 'Logs');
    await d.page.getByLabel('Token').selectOption(t.token_id);
    await d.page.getByLabel('Outcome').selectOption('false');
    expect(new URL(d.page.url()).search).toBe(`?token_id=${t.token_id}&authorized=false`);
    await shows(403);

    await d.page.reload();
    await d.page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor();
    await shows(403);
    expect(await d.page.getByLabel('Outcome').inputValue()).toBe('false');

    await d.page.getByLabel('Outcome').selectOption('true');
    await shows(200);
    await d.page.goBack();
    await shows(403);
    expect(await d.page.getByLabel('Outcome').inputValue()).toBe('false');

    // A value the view does not offer is no filter, rather than an empty list.
    await d.page.goto(`${d.server.apiUrl}/logs?token_id=${t.token_id}&status=teapot`);
    await d.page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor();
    await table.getByRole('cell', { name: '200', exact: true }).waitFor();
    await table.getByRole('cell', { name: '403 refused', exact: true }).waitFor();
    expect(await d.page.getByLabel('Status').inputValue()).toBe('');
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
