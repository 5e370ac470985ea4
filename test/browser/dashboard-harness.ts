import { mkdtemp, rm } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect } from 'vitest';
import { createAccount } from '../../src/accounts/create-account.js';
import { createLogger } from '../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../src/server/start.js';
import { launchChromium } from '../support/chromium.js';
import { mockProviderConfig } from '../support/server-config.js';
import { startMockProvider } from '../support/mock-provider.js';
import { expectNoSecrets } from './dashboard-pages.js';

export const REAL_KEY = `sk-dashboard-${Date.now()}-real-key`;
export const XSS_NAME = '<img src=x onerror="window.__xss=1">';
/** The proxy stores only well-formed origins, so markup reaches the anomaly log in the path, or from the store. */
export const XSS_PATH = '/openai/v1/"><img/src=x/onerror=window.__xss=2>';
export const XSS_ORIGIN = 'https://evil.example"><script>window.__xss=3</script>';
export const ALLOWED = 'https://app.example.com';

export interface ApiAnswer {
  status: number;
  body: Record<string, unknown> & { data: Record<string, unknown>[] };
}

/** A running proxy with two accounts and a failing webhook, and Chromium with one desktop page open. */
export interface DashboardHarness {
  server: RunningServer;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** "Acme Security", whose session the page holds once signed in. */
  apiKey: string;
  /** Another account, whose tokens Acme's views must never show. */
  otherKey: string;
  /** Everything secret made so far: none of it may reach the page. */
  secrets: string[];
  api(
    key: string,
    method: string,
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<ApiAnswer>;
  proxy(
    token: string,
    origin: string,
    from?: string,
    path?: string,
  ): Promise<{ status: number; body: string }>;
  createToken(
    key: string,
    name: string,
    hosts?: string[],
  ): Promise<{ token_id: string; sanitized_key: string }>;
  /** Nothing secret anywhere a script or the page could keep it. */
  expectNoSecretsInBrowser(p: Page): Promise<void>;
  newDesktopContext(): Promise<BrowserContext>;
  /** Signs `p` in through the form, as a user would, and waits for the Overview. */
  signIn(p: Page, key: string): Promise<void>;
  close(): Promise<void>;
}

interface HarnessOptions {
  /** Whether `page` starts signed in as Acme, or at the sign-in form. */
  signedIn: boolean;
  /** Whether Acme starts with the history of `seedHistory`, for suites whose views must show some. */
  seeded: boolean;
}

/**
 * The harness for the enclosing describe block: started before its tests, closed after them. The object
 * is filled in by that beforeAll, which vitest runs before any test reads it.
 */
export function useDashboardHarness(options: HarnessOptions): DashboardHarness {
  const d = {} as DashboardHarness;
  beforeAll(async () => {
    Object.assign(d, await startDashboardHarness(options));
  });
  afterAll(async () => {
    await d.close?.();
  });
  return d;
}

async function startDashboardHarness(options: HarnessOptions): Promise<DashboardHarness> {
  const stops: (() => Promise<void>)[] = [];
  // In reverse order of start, so the browser goes before the server and the server before its data.
  const close = async (): Promise<void> => {
    for (const stop of stops.splice(0).reverse()) await stop();
  };
  try {
    const d = { ...(await setUp(options, stops)), close };
    if (options.seeded) await seedHistory(d);
    return d;
  } catch (err) {
    // A setup that fails half-way must not leave servers holding the test process open.
    await close();
    throw err;
  }
}

async function setUp(
  options: HarnessOptions,
  stops: (() => Promise<void>)[],
): Promise<Omit<DashboardHarness, 'close'>> {
  const mock = await startMockProvider();
  stops.push(() => mock.close());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-dashboard-'));
  stops.push(() => rm(dataDir, { recursive: true, force: true }));
  const config = await mockProviderConfig(dataDir, mock, {
    flags: { host: '127.0.0.1', allow_private_webhooks: 'true' },
  });
  const server = await startServer(config, {
    env: {},
    logger: createLogger('silent'),
    print: () => undefined,
  });
  stops.push(() => server.close());
  const apiKey = (await createAccount(server.store, 'Acme Security', 'unlimited', new Date())).apiKey;
  const otherKey = (await createAccount(server.store, 'Other Corp', 'unlimited', new Date())).apiKey;
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  stops.push(() => dispatcher.close());
  const secrets: string[] = [REAL_KEY];

  async function api(
    key: string,
    method: string,
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiAnswer> {
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
    return { status: res.statusCode, body: (text === '' ? null : JSON.parse(text)) as ApiAnswer['body'] };
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

  // An endpoint nothing listens on: its deliveries fail, which the Webhooks view must show.
  const hook = await api(apiKey, 'POST', '/v1/webhooks', {
    url: 'https://127.0.0.1:9/tokenproxy',
    events: ['*'],
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  secrets.push(String(hook.body.secret));
  const browser = await launchChromium();
  stops.push(() => browser.close());
  // The management listener's certificate is self-signed; the user trusts it after checking the
  // printed fingerprint. Everything else is the browser's own doing.
  const newDesktopContext = () =>
    browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 860 } });
  const context = await newDesktopContext();
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();

  async function signIn(p: Page, key: string): Promise<void> {
    await p.goto(`${server.apiUrl}/`);
    await p.getByLabel('API key').fill(key);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  }
  if (options.signedIn) await signIn(page, apiKey);

  return {
    server,
    browser,
    context,
    page,
    apiKey,
    otherKey,
    secrets,
    api,
    proxy,
    createToken,
    expectNoSecretsInBrowser: (p) => expectNoSecrets(p, [...secrets, apiKey, otherKey]),
    newDesktopContext,
    signIn,
  };
}

/**
 * What a long session leaves behind, since views checked on an empty account would prove little:
 * tokens with markup and commas in their names, a refusal with markup in its path, and a revoked
 * token (an audit entry, and a token.revoked delivery to the failing webhook).
 */
async function seedHistory(d: DashboardHarness): Promise<void> {
  await d.createToken(d.apiKey, XSS_NAME);
  const t = await d.createToken(d.apiKey, 'web app, production');
  expect((await d.proxy(t.sanitized_key, 'https://evil.example', '127.0.0.9', XSS_PATH)).status).toBe(403);
  const revoked = await d.api(d.apiKey, 'DELETE', `/v1/tokens/${t.token_id}`);
  expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
}
