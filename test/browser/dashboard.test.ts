import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../src/server/start.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { startReceiver } from '../events/support.js';

const CHROMIUM = '/usr/bin/chromium';
const REAL_KEY = `sk-dashboard-${Date.now()}-real-key`;
const XSS_NAME = '<img src=x onerror="window.__xss=1">';
/** The proxy stores only well-formed origins, so markup reaches the anomaly log in the path, or from the store. */
const XSS_PATH = '/openai/v1/"><img/src=x/onerror=window.__xss=2>';
const XSS_ORIGIN = 'https://evil.example"><script>window.__xss=3</script>';
const ALLOWED = 'https://app.example.com';
/** Screenshots of every view land here; with DASHBOARD_SCREENSHOT_DOCS=1 the README's one goes to docs/. */
const SHOTS = path.resolve('.tmp/dashboard-screenshots');
const VIEWS = ['Overview', 'Tokens', 'Anomalies', 'Logs', 'Keys', 'Webhooks', 'Settings'] as const;

describe.skipIf(!existsSync(CHROMIUM))('the dashboard in Chromium', () => {
  let mock: MockProvider;
  let dataDir: string;
  let server: RunningServer;
  let browser: Browser;
  let dispatcher: Agent;
  let apiKey = '';
  let otherKey = '';
  let context: BrowserContext;
  let page: Page;
  const secrets: string[] = [REAL_KEY];

  async function api(
    key: string,
    method: string,
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    const res = await request(`${server.apiUrl}${url}`, {
      method: method as 'GET',
      dispatcher,
      headers: {
        ...(key === '' ? {} : { authorization: `Bearer ${key}` }),
        'content-type': 'application/json',
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text();
    return {
      status: res.statusCode,
      body: (text === '' ? null : JSON.parse(text)) as Record<string, unknown> & {
        data: Record<string, unknown>[];
      },
    };
  }

  /**
   * A proxied call from `from` (a loopback address of its own per test, bound with node:https since
   * undici does not take a local address), so that one test's refused requests do not put the next
   * test's address in IP backoff.
   */
  function proxy(
    token: string,
    origin: string,
    from = '127.0.0.1',
    path = '/openai/v1/chat/completions',
  ): Promise<{ status: number; body: string }> {
    const body = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    return new Promise((resolve, reject) => {
      const req = https.request(
        `${server.proxyUrl}${path}`,
        {
          method: 'POST',
          localAddress: from,
          rejectUnauthorized: false,
          agent: false,
          headers: { authorization: `Bearer ${token}`, origin, 'content-type': 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  async function createToken(
    key: string,
    name: string,
    hosts = [ALLOWED],
  ): Promise<{ token_id: string; sanitized_key: string }> {
    const res = await api(key, 'POST', '/v1/tokens', {
      name,
      provider: 'openai',
      real_key: REAL_KEY,
      allowed_hosts: hosts,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const created = res.body as unknown as { token_id: string; sanitized_key: string };
    secrets.push(created.sanitized_key);
    return created;
  }

  /** Nothing secret anywhere a script or the page could keep it. */
  async function expectNoSecretsInBrowser(p: Page) {
    // Evaluated in the page (a string: this project's TypeScript has no DOM types).
    const seen = await p.evaluate<{
      local: string;
      session: string;
      cookie: string;
      html: string;
      url: string;
    }>(
      `({
        local: JSON.stringify({ ...localStorage }),
        session: JSON.stringify({ ...sessionStorage }),
        cookie: document.cookie,
        html: document.documentElement.outerHTML,
        url: location.href,
      })`,
    );
    expect(seen.local).toBe('{}');
    expect(seen.session).toBe('{}');
    expect(seen.cookie).toBe('');
    for (const secret of [...secrets, apiKey, otherKey]) {
      expect(seen.html).not.toContain(secret);
      expect(seen.url).not.toContain(secret);
    }
  }

  async function go(p: Page, view: (typeof VIEWS)[number]) {
    await p
      .getByRole('navigation', { name: 'Dashboard' })
      .getByRole('link', { name: view, exact: true })
      .click();
    await p.getByRole('heading', { level: 1, name: view }).waitFor();
  }

  async function shoot(p: Page, name: string) {
    await mkdir(SHOTS, { recursive: true });
    await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  }

  beforeAll(async () => {
    mock = await startMockProvider();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-dashboard-'));
    const caFile = path.join(dataDir, 'provider-ca.pem');
    await writeFile(caFile, mock.caCertPem);
    const configFile = path.join(dataDir, 'config.json');
    await writeFile(
      configFile,
      JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } } }),
    );
    const config = loadConfig({
      flags: {
        data_dir: dataDir,
        api_port: '0',
        proxy_port: '0',
        provider_ca: caFile,
        host: '127.0.0.1',
        allow_private_webhooks: 'true',
      },
      env: {},
      configFile,
    });
    server = await startServer(config, { env: {}, logger: createLogger('silent'), print: () => undefined });
    const account = await createAccount(server.store, 'Acme Security', 'unlimited', new Date());
    apiKey = account.apiKey;
    otherKey = (await createAccount(server.store, 'Other Corp', 'unlimited', new Date())).apiKey;
    dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
    // An endpoint nothing listens on: its deliveries fail, which the Webhooks view must show.
    const hook = await api(apiKey, 'POST', '/v1/webhooks', {
      url: 'https://127.0.0.1:9/tokenproxy',
      events: ['*'],
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    secrets.push(String(hook.body.secret));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    // The management listener's certificate is self-signed; the user trusts it after checking the
    // printed fingerprint. Everything else is the browser's own doing.
    context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 860 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await mock?.close();
    await dispatcher?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('sign in: a wrong key shows an error and sets no cookie; the right key opens a session cookie scripts cannot read', async () => {
    await page.goto(`${server.apiUrl}/`);
    await page.getByLabel('API key').fill(`svc_sk_${'1'.repeat(43)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('not valid');
    expect(await context.cookies()).toEqual([]);
    await shoot(page, 'sign-in-desktop');

    // One wrong key puts this IP in a 1 s backoff: wait it out as a user would.
    await page.waitForTimeout(1100);
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();

    const cookies = await context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({
      name: 'tokenproxy_session',
      httpOnly: true,
      secure: true,
      sameSite: 'Strict',
      path: '/',
    });
    expect(cookies[0]?.value).not.toContain(apiKey);
    await expectNoSecretsInBrowser(page);
    // The field is gone and its value with it.
    expect(await page.getByLabel('API key').count()).toBe(0);
  });

  it("the tokens table shows only this account's tokens, and a markup name as text that never runs", async () => {
    await createToken(apiKey, XSS_NAME);
    await createToken(apiKey, 'web app, production');
    await createToken(otherKey, 'someone else’s token');
    await go(page, 'Tokens');
    const table = page.getByRole('table', { name: 'Tokens' });
    await table.getByRole('cell', { name: XSS_NAME, exact: true }).waitFor();
    await table.getByRole('cell', { name: 'web app, production', exact: true }).waitFor();
    expect(await table.getByText('someone else’s token').count()).toBe(0);
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(await page.evaluate<number | null>('window.__xss ?? null')).toBeNull();
    await expectNoSecretsInBrowser(page);
  });

  it('creates a token: the sanitized key is shown once with a copy button, and is gone after Done', async () => {
    await page.getByRole('button', { name: 'Create token' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a token' });
    await dialog.getByLabel('Name', { exact: true }).fill('checkout widget');
    await dialog.getByLabel('Real key', { exact: true }).fill(REAL_KEY);
    await dialog.getByLabel('Allowed hosts', { exact: true }).fill('checkout.example.com');
    await dialog.getByRole('button', { name: 'Create token' }).click();
    const shown = page.getByLabel('New sanitized token');
    await shown.waitFor();
    const key = await shown.inputValue();
    expect(key).toMatch(/^svc_hb_[1-9A-HJ-NP-Za-km-z]{43}$/);
    await page.getByRole('button', { name: 'Copy', exact: true }).waitFor();
    await shoot(page, 'tokens-created-desktop');
    await page.getByRole('button', { name: 'Done' }).click();
    secrets.push(key);
    await page
      .getByRole('table', { name: 'Tokens' })
      .getByRole('cell', { name: 'checkout widget', exact: true })
      .waitFor();
    await expectNoSecretsInBrowser(page);
  });

  it('edits a token: allowed hosts and rate limit, effective on the next request', async () => {
    const t = await createToken(apiKey, 'editable');
    await page.reload();
    const row = page
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: 'editable', exact: true }) });
    await row.getByRole('button', { name: 'Edit', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit editable' });
    // Not exact: a label around a filled field takes the field's value into its accessible name.
    await dialog.getByLabel('Allowed hosts').fill('other.example.com');
    await dialog.getByLabel('Rate limit (requests)').fill('100');
    await dialog.getByLabel('Per window').fill('1m');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved editable').waitFor();
    const stored = await api(apiKey, 'GET', `/v1/tokens/${t.token_id}`);
    expect(stored.body).toMatchObject({
      authorized_origins: ['other.example.com'],
      rate_limit: { requests: 100, window: '1m' },
    });
    expect((await proxy(t.sanitized_key, ALLOWED, '127.0.0.2')).status).toBe(403);
    expect((await proxy(t.sanitized_key, 'https://other.example.com', '127.0.0.2')).status).toBe(200);
  });

  it('revokes with confirmation: then the proxy answers 401 token_revoked and one token.revoked event exists', async () => {
    const t = await createToken(apiKey, 'to revoke');
    expect((await proxy(t.sanitized_key, ALLOWED)).status).toBe(200);
    await page.reload();
    await page.getByRole('button', { name: 'Revoke to revoke' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke this token?' });
    await shoot(page, 'tokens-revoke-confirm-desktop');
    await dialog.getByRole('button', { name: 'Revoke token' }).click();
    await page.getByText('Revoked to revoke.').waitFor();
    const refused = await proxy(t.sanitized_key, ALLOWED, '127.0.0.3');
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'token_revoked' } });
    const events = await api(apiKey, 'GET', '/v1/events?type=token.revoked&limit=100');
    expect(
      events.body.data.filter((e) => (e.data as { token_id: string }).token_id === t.token_id),
    ).toHaveLength(1);
  });

  it('Settings shows the audit log: the dashboard\'s changes by "dashboard session", the API\'s by key name', async () => {
    await createToken(apiKey, 'audited via api');
    await go(page, 'Settings');
    const table = page.getByRole('table', { name: 'Audit log entries' });
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
    await page.getByLabel('Action').selectOption('token.revoked');
    await table.getByRole('row').filter({ hasText: 'token.created' }).first().waitFor({ state: 'detached' });
    expect(await table.getByRole('row').filter({ hasText: 'token.revoked' }).count()).toBeGreaterThan(0);
    await shoot(page, 'settings-audit-desktop');
    await expectNoSecretsInBrowser(page);
  });

  it('anomalies appear live (within 5 s, no reload) after an unauthorized request; stored markup is shown as text', async () => {
    const t = await createToken(apiKey, 'live one');
    await go(page, 'Anomalies');
    const url = page.url();
    expect((await proxy(t.sanitized_key, 'https://evil.example', '127.0.0.4', XSS_PATH)).status).toBe(403);
    const table = page.getByRole('table', { name: 'Anomalies' });
    await table.getByRole('cell', { name: 'live one', exact: true }).waitFor({ timeout: 5000 });
    // node:https percent-encodes the quotes and brackets of the path, as browsers do.
    await table.getByText('onerror=window.__xss=2').waitFor();
    // An origin carrying markup, as a stored value (the proxy itself keeps only well-formed origins).
    const account = await api(apiKey, 'GET', '/v1/account');
    await server.store.anomalies.insertMany([
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
    expect(page.url()).toBe(url);
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(await page.evaluate<number | null>('window.__xss ?? null')).toBeNull();
    // The row's token is active: it can be revoked from here.
    await table.getByRole('button', { name: 'Revoke live one' }).first().waitFor();
    // The breach e-mail's link: the view filtered to one token.
    await page.goto(`${server.apiUrl}/anomalies?token_id=${t.token_id}`);
    await page.getByText('Showing token').waitFor();
    await table.getByRole('cell', { name: 'live one', exact: true }).first().waitFor();
    await shoot(page, 'anomalies-desktop');
  });

  it("the Overview's numbers match known traffic", async () => {
    const fresh = await createAccount(server.store, 'Numbers Inc', 'unlimited', new Date());
    secrets.push(fresh.apiKey);
    const t = await createToken(fresh.apiKey, 'counted');
    for (let i = 0; i < 5; i++) expect((await proxy(t.sanitized_key, ALLOWED, '127.0.0.5')).status).toBe(200);
    // The first is refused 403, the second 429 while the address is in backoff: both are refusals.
    for (let i = 0; i < 2; i++) await proxy(t.sanitized_key, 'https://not-allowed.example', '127.0.0.5');
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 860 } });
    try {
      const p = await ctx.newPage();
      await p.goto(`${server.apiUrl}/`);
      await p.getByLabel('API key').fill(fresh.apiKey);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      // The log is written in the background: reload until the rollups have it.
      await expect
        .poll(
          async () => {
            await p.reload();
            await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
            await p.getByTestId('forwarded-24h').filter({ hasNotText: '…' }).waitFor();
            return {
              forwarded: await p.getByTestId('forwarded-24h').textContent(),
              refused: await p.getByTestId('refused-24h').textContent(),
            };
          },
          { timeout: 10_000 },
        )
        .toEqual({ forwarded: '5', refused: '2' });
      expect(await p.getByTestId('stat-requests').textContent()).toContain('5');
      expect(await p.getByTestId('stat-tokens').textContent()).toContain('1');
      await p
        .getByRole('table', { name: 'Refused requests by reason' })
        .getByRole('cell', { name: 'Origin or IP not allowed' })
        .waitFor();
      await p.locator('.chart canvas').first().waitFor();
      await shoot(p, 'overview-desktop');
      if (process.env.DASHBOARD_SCREENSHOT_DOCS === '1') {
        await p.screenshot({ path: path.resolve('docs/dashboard.png') });
      }
    } finally {
      await ctx.close();
    }
  });

  it("a token's row shows its spend against its budget, as GET /v1/usage counts it", async () => {
    const fresh = await createAccount(server.store, 'Budget Ltd', 'unlimited', new Date());
    secrets.push(fresh.apiKey);
    const t = await createToken(fresh.apiKey, 'budgeted');
    const patched = await api(fresh.apiKey, 'PATCH', `/v1/tokens/${t.token_id}`, {
      budget: { tokens: 100000, period: 'month' },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    for (let i = 0; i < 3; i++) expect((await proxy(t.sanitized_key, ALLOWED)).status).toBe(200);
    // The mock answers with `usage`; the proxy settles each reservation to it after the answer.
    await expect
      .poll(async () => {
        const usage = await api(fresh.apiKey, 'GET', '/v1/usage');
        const budgets = (usage.body as { budgets?: Array<{ token_id: string | null; used: number }> })
          .budgets;
        return budgets?.find((b) => b.token_id === t.token_id)?.used ?? 0;
      })
      .toBeGreaterThan(0);
    const usage = await api(fresh.apiKey, 'GET', '/v1/usage');
    const status = (
      usage.body as unknown as { budgets: Array<{ token_id: string | null; used: number }> }
    ).budgets.find((b) => b.token_id === t.token_id);
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 860 } });
    try {
      const p = await ctx.newPage();
      await p.goto(`${server.apiUrl}/`);
      await p.getByLabel('API key').fill(fresh.apiKey);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await go(p, 'Tokens');
      const cell = p.getByTestId('token-budget').first();
      await cell.filter({ hasText: 'tokens this month' }).waitFor();
      expect((await cell.textContent())?.trim()).toBe(
        `${(status?.used ?? -1).toLocaleString('en-US')} / 100,000 tokens this month`,
      );
    } finally {
      await ctx.close();
    }
  });

  it('the Webhooks view lists endpoints with their recent deliveries and outcome', async () => {
    await go(page, 'Webhooks');
    const deliveries = page.getByRole('table', { name: 'Deliveries to https://127.0.0.1:9/tokenproxy' });
    await deliveries.getByRole('cell', { name: 'token.revoked' }).first().waitFor();
    // Nothing listens there: attempts fail and say why.
    await expect
      .poll(
        async () => {
          await page.reload();
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
      const hook = await api(apiKey, 'POST', '/v1/webhooks', {
        url: receiver.url,
        events: ['token.revoked'],
      });
      expect(hook.status).toBe(201);
      secrets.push(String(hook.body.secret));
      const off = await api(apiKey, 'PATCH', `/v1/webhooks/${String(hook.body.webhook_id)}`, {
        enabled: false,
      });
      expect(off.status).toBe(200);
      await go(page, 'Webhooks');
      // The view may already be open from the test before: load the list with the new endpoint.
      await page.reload();
      const card = page.getByRole('article', { name: `Endpoint ${receiver.url}` });
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
            await page.reload();
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

  it('CSRF: a cookie request with a foreign Origin is refused and changes nothing', async () => {
    const cookie = (await context.cookies())[0];
    expect(cookie).toBeDefined();
    const header = { cookie: `tokenproxy_session=${cookie?.value ?? ''}` };
    const before = await api('', 'GET', '/v1/tokens?status=active&limit=100', undefined, header);
    expect(before.status).toBe(200);
    expect(before.body.data.length).toBeGreaterThan(0);
    const forged = await api('', 'POST', '/v1/tokens/revoke_all', undefined, {
      ...header,
      origin: 'https://evil.example',
    });
    expect(forged.status).toBe(403);
    expect(forged.body).toMatchObject({ error: { code: 'csrf_rejected' } });
    const noOrigin = await api('', 'POST', '/v1/tokens/revoke_all', undefined, header);
    expect(noOrigin.status).toBe(403);
    const after = await api('', 'GET', '/v1/tokens?status=active&limit=100', undefined, header);
    expect(after.body.data.length).toBe(before.body.data.length);
  });

  it('every view renders, with screenshots, and nothing overflows a 390 px phone screen', async () => {
    const phone = await browser.newContext({
      ignoreHTTPSErrors: true,
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
    });
    try {
      await phone.addCookies(await context.cookies());
      const p = await phone.newPage();
      await p.goto(`${server.apiUrl}/`);
      for (const view of VIEWS) {
        await go(page, view);
        await page.waitForLoadState('networkidle');
        await shoot(page, `${view.toLowerCase()}-desktop`);
        await go(p, view);
        await p.waitForLoadState('networkidle');
        const widths = await p.evaluate<{ scroll: number; client: number }>(
          '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
        );
        expect(widths.scroll, view).toBeLessThanOrEqual(widths.client);
        await shoot(p, `${view.toLowerCase()}-phone`);
        await expectNoSecretsInBrowser(p);
      }
      await p.goto(`${server.apiUrl}/tokens`);
      await p.getByRole('button', { name: 'Revoke all tokens' }).click();
      await shoot(p, 'tokens-revoke-all-phone');
    } finally {
      await phone.close();
    }
  });

  it('the kill switch is confirmed by typing the account name', async () => {
    await go(page, 'Tokens');
    await page.getByRole('button', { name: 'Revoke all tokens' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke all tokens?' });
    const confirm = dialog.getByRole('button', { name: 'Revoke all tokens' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Type Acme Security to confirm').fill('Acme');
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Type Acme Security to confirm').fill('Acme Security');
    await confirm.click();
    await page.getByText(/^Revoked \d+ tokens?\.$/).waitFor();
    const active = await api(apiKey, 'GET', '/v1/tokens?status=active');
    expect(active.body.data).toEqual([]);
  });

  it('sign out ends the session on the server: the old cookie no longer works', async () => {
    const old = (await context.cookies())[0]?.value ?? '';
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await context.cookies()).toEqual([]);
    const res = await api('', 'GET', '/v1/account', undefined, { cookie: `tokenproxy_session=${old}` });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: { code: 'session_expired' } });
  });
});
