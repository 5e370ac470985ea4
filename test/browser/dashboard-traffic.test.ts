import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.js';
import { hasChromium } from '../support/chromium.js';
import { ALLOWED, XSS_ORIGIN, XSS_PATH, useDashboardHarness } from './dashboard-harness.js';
import { go, shoot } from './dashboard-pages.js';

describe.skipIf(!hasChromium)('the dashboard in Chromium: traffic', () => {
  const d = useDashboardHarness({ signedIn: true, seeded: false });

  it('anomalies appear live (within 5 s, no reload) after an unauthorized request; stored markup is shown as text', async () => {
    const t = await d.createToken(d.apiKey, 'live one');
    await go(d.page, 'Anomalies');
    const url = d.page.url();
    expect((await d.proxy(t.sanitized_key, 'https://evil.example', '127.0.0.4', XSS_PATH)).status).toBe(403);
    const table = d.page.getByRole('table', { name: 'Anomalies' });
    await table.getByRole('cell', { name: 'live one', exact: true }).waitFor({ timeout: 5000 });
    // node:https percent-encodes the quotes and brackets of the path, as browsers do.
    await table.getByText('onerror=window.__xss=2').waitFor();
    // An origin carrying markup, as a stored value (the proxy itself keeps only well-formed origins).
    const account = await d.api(d.apiKey, 'GET', '/v1/account');
    await d.server.store.anomalies.insertMany([
      {
        id: `req_markup_${Date.now()}`,
        accountId: String(account.body.account_id),
        tokenId: t.token_id,
        timestamp: new Date().toISOString(),
        origin: XSS_ORIGIN,
        ip: '198.51.100.7',
        country: 'NL',
        path: '/openai/v1/models',
        reason: 'origin_not_allowed',
        kind: 'breach',
        details: null,
      },
    ]);
    await table.getByText(XSS_ORIGIN, { exact: true }).waitFor({ timeout: 5000 });
    expect(d.page.url()).toBe(url);
    expect(await d.page.locator('img[src="x"]').count()).toBe(0);
    expect(await d.page.evaluate<number | null>('window.__xss ?? null')).toBeNull();
    // The row's token is active: it can be revoked from here.
    await table.getByRole('button', { name: 'Revoke live one' }).first().waitFor();
    // The breach e-mail's link: the view filtered to one token.
    await d.page.goto(`${d.server.apiUrl}/anomalies?token_id=${t.token_id}`);
    await d.page.getByText('Showing token').waitFor();
    await table.getByRole('cell', { name: 'live one', exact: true }).first().waitFor();
    await shoot(d.page, 'anomalies-desktop');
  });

  it("the Overview's numbers match known traffic", async () => {
    const fresh = await createAccount(d.server.store, 'Numbers Inc', 'unlimited', new Date());
    d.secrets.push(fresh.apiKey);
    const t = await d.createToken(fresh.apiKey, 'counted');
    for (let i = 0; i < 5; i++)
      expect((await d.proxy(t.sanitized_key, ALLOWED, '127.0.0.5')).status).toBe(200);
    // The first is refused 403, the second 429 while the address is in backoff: both are refusals.
    for (let i = 0; i < 2; i++) await d.proxy(t.sanitized_key, 'https://not-allowed.example', '127.0.0.5');
    const ctx = await d.newDesktopContext();
    try {
      const p = await ctx.newPage();
      await d.signIn(p, fresh.apiKey);
      // The log thread writes the request log and the plan's usage counts as separate batches, in
      // the background: reload until both have all of the traffic.
      await expect
        .poll(
          async () => {
            await p.reload();
            await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
            await p.getByTestId('forwarded-24h').filter({ hasNotText: '…' }).waitFor();
            return {
              forwarded: await p.getByTestId('forwarded-24h').textContent(),
              refused: await p.getByTestId('refused-24h').textContent(),
              requests: await p.getByTestId('stat-requests').textContent(),
            };
          },
          { timeout: 10_000 },
        )
        .toEqual({ forwarded: '5', refused: '2', requests: 'Requests this month5 / unlimited' });
      expect(await p.getByTestId('stat-tokens').textContent()).toContain('1');
      await p
        .getByRole('table', { name: 'Refused requests by reason' })
        .getByRole('cell', { name: 'Origin or IP not allowed' })
        .waitFor();
      await p.locator('.chart canvas').first().waitFor();
      await shoot(p, 'overview-traffic-desktop');
      if (process.env.DASHBOARD_SCREENSHOT_DOCS === '1') {
        await p.screenshot({ path: path.resolve('docs/dashboard.png') });
      }
    } finally {
      await ctx.close();
    }
  });

  it("a token's row shows its spend against its budget, as GET /v1/usage counts it", async () => {
    const fresh = await createAccount(d.server.store, 'Budget Ltd', 'unlimited', new Date());
    d.secrets.push(fresh.apiKey);
    const t = await d.createToken(fresh.apiKey, 'budgeted');
    const patched = await d.api(fresh.apiKey, 'PATCH', `/v1/tokens/${t.token_id}`, {
      budget: { tokens: 100000, period: 'month' },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    // The mock answers with `usage`; the proxy settles each reservation to it after the answer, in
    // the background. One request first, to learn what one costs; then the spend of all three is
    // known exactly, and the page is read only once the API counts all of it.
    const used = async (): Promise<number> => {
      const usage = await d.api(fresh.apiKey, 'GET', '/v1/usage');
      const budgets = (usage.body as { budgets?: Array<{ token_id: string | null; used: number }> }).budgets;
      return budgets?.find((b) => b.token_id === t.token_id)?.used ?? 0;
    };
    expect((await d.proxy(t.sanitized_key, ALLOWED)).status).toBe(200);
    await expect.poll(used).toBeGreaterThan(0);
    const one = await used();
    for (let i = 0; i < 2; i++) expect((await d.proxy(t.sanitized_key, ALLOWED)).status).toBe(200);
    await expect.poll(used).toBe(3 * one);
    const ctx = await d.newDesktopContext();
    try {
      const p = await ctx.newPage();
      await d.signIn(p, fresh.apiKey);
      await go(p, 'Tokens');
      const cell = p.getByTestId('token-budget').first();
      await cell.filter({ hasText: 'tokens this month' }).waitFor();
      expect((await cell.textContent())?.trim()).toBe(
        `${(3 * one).toLocaleString('en-US')} / 100,000 tokens this month`,
      );
    } finally {
      await ctx.close();
    }
  });
});
