import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

/** Screenshots of every view land here; with DASHBOARD_SCREENSHOT_DOCS=1 the README's one goes to docs/. */
const SHOTS = path.resolve('.tmp/dashboard-screenshots');
export const VIEWS = ['Overview', 'Tokens', 'Anomalies', 'Logs', 'Keys', 'Webhooks', 'Settings'] as const;

export async function go(p: Page, view: (typeof VIEWS)[number]): Promise<void> {
  await p
    .getByRole('navigation', { name: 'Dashboard' })
    .getByRole('link', { name: view, exact: true })
    .click();
  await p.getByRole('heading', { level: 1, name: view }).waitFor();
}

export async function shoot(p: Page, name: string): Promise<void> {
  await mkdir(SHOTS, { recursive: true });
  await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

/** Nothing secret anywhere a script or the page could keep it. */
export async function expectNoSecrets(p: Page, secrets: readonly string[]): Promise<void> {
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
  for (const secret of secrets) {
    expect(seen.html).not.toContain(secret);
    expect(seen.url).not.toContain(secret);
  }
}
