import { describe, expect, it } from 'vitest';
import { hasChromium } from '../support/chromium.js';
import { useDashboardHarness } from './dashboard-harness.js';
import { VIEWS, go, shoot } from './dashboard-pages.js';

describe.skipIf(!hasChromium)('the dashboard in Chromium: every view', () => {
  const d = useDashboardHarness({ signedIn: true, seeded: true });

  it('every view renders, with screenshots, and nothing overflows a 390 px phone screen', async () => {
    const phone = await d.browser.newContext({
      ignoreHTTPSErrors: true,
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
    });
    try {
      await phone.addCookies(await d.context.cookies());
      const p = await phone.newPage();
      await p.goto(`${d.server.apiUrl}/`);
      // The desktop page was signed in before the seed: load it again so its shots show the seeded data.
      await d.page.goto(`${d.server.apiUrl}/`);
      for (const view of VIEWS) {
        await go(d.page, view);
        await d.page.waitForLoadState('networkidle');
        await shoot(d.page, `${view.toLowerCase()}-desktop`);
        await go(p, view);
        await p.waitForLoadState('networkidle');
        const widths = await p.evaluate<{ scroll: number; client: number }>(
          '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
        );
        expect(widths.scroll, view).toBeLessThanOrEqual(widths.client);
        await shoot(p, `${view.toLowerCase()}-phone`);
        await d.expectNoSecretsInBrowser(p);
      }
      await p.goto(`${d.server.apiUrl}/tokens`);
      await p.getByRole('button', { name: 'Revoke all tokens' }).click();
      await shoot(p, 'tokens-revoke-all-phone');
    } finally {
      await phone.close();
    }
  });
});
