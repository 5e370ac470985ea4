import { beforeAll, describe, expect, it } from 'vitest';
import { hasChromium } from '../support/chromium.js';
import { useDashboardHarness } from './dashboard-harness.js';
import { shoot } from './dashboard-pages.js';

describe.skipIf(!hasChromium)('the dashboard in Chromium: session', () => {
  const d = useDashboardHarness({ signedIn: false, seeded: false });

  beforeAll(async () => {
    // So that the forged revoke_all of the CSRF test has a token it could have revoked.
    await d.createToken(d.apiKey, 'still active');
  });

  it('sign in: a wrong key shows an error and sets no cookie; the right key opens a session cookie scripts cannot read', async () => {
    await d.page.goto(`${d.server.apiUrl}/`);
    await d.page.getByLabel('API key').fill(`svc_sk_${'1'.repeat(43)}`);
    await d.page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => d.page.getByRole('alert').textContent()).toContain('not valid');
    expect(await d.context.cookies()).toEqual([]);
    await shoot(d.page, 'sign-in-desktop');

    // One wrong key puts this IP in a 1 s backoff: wait it out as a user would.
    await d.page.waitForTimeout(1100);
    await d.page.getByLabel('API key').fill(d.apiKey);
    await d.page.getByRole('button', { name: 'Sign in' }).click();
    await d.page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();

    const cookies = await d.context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({
      name: 'tokenproxy_session',
      httpOnly: true,
      secure: true,
      sameSite: 'Strict',
      path: '/',
    });
    expect(cookies[0]?.value).not.toContain(d.apiKey);
    await d.expectNoSecretsInBrowser(d.page);
    // The field is gone and its value with it.
    expect(await d.page.getByLabel('API key').count()).toBe(0);
  });

  it('CSRF: a cookie request with a foreign Origin is refused and changes nothing', async () => {
    const cookie = (await d.context.cookies())[0];
    expect(cookie).toBeDefined();
    const header = { cookie: `tokenproxy_session=${cookie?.value ?? ''}` };
    const before = await d.api('', 'GET', '/v1/tokens?status=active&limit=100', undefined, header);
    expect(before.status).toBe(200);
    expect(before.body.data.length).toBeGreaterThan(0);
    const forged = await d.api('', 'POST', '/v1/tokens/revoke_all', undefined, {
      ...header,
      origin: 'https://evil.example',
    });
    expect(forged.status).toBe(403);
    expect(forged.body).toMatchObject({ error: { code: 'csrf_rejected' } });
    const noOrigin = await d.api('', 'POST', '/v1/tokens/revoke_all', undefined, header);
    expect(noOrigin.status).toBe(403);
    const after = await d.api('', 'GET', '/v1/tokens?status=active&limit=100', undefined, header);
    expect(after.body.data.length).toBe(before.body.data.length);
  });

  it('sign out ends the session on the server: the old cookie no longer works', async () => {
    const old = (await d.context.cookies())[0]?.value ?? '';
    await d.page.getByRole('button', { name: 'Sign out' }).click();
    await d.page.getByLabel('API key').waitFor();
    expect(await d.context.cookies()).toEqual([]);
    const res = await d.api('', 'GET', '/v1/account', undefined, { cookie: `tokenproxy_session=${old}` });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: { code: 'session_expired' } });
  });
});
