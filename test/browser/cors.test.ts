import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { hasChromium, launchChromium } from '../support/chromium.js';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../src/server/start.js';
import { mockProviderConfig } from '../support/server-config.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';

const REAL_KEY = `sk-browser-${Date.now()}-real-key`;

/** A page that calls the proxy with `fetch`, as a browser app would, and reports what it got. */
function pageHtml(proxyUrl: string, token: string): string {
  return `<!doctype html><meta charset="utf-8"><title>app</title><script>
    window.result = fetch(${JSON.stringify(`${proxyUrl}/openai/v1/chat/completions`)}, {
      method: 'POST',
      headers: { authorization: 'Bearer ${token}', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
    }).then(
      async (res) => ({ status: res.status, body: await res.text(), requestId: res.headers.get('x-tokenproxy-request-id') }),
      (err) => ({ status: 0, body: String(err) }),
    );
  </script>`;
}

async function servePage(html: () => string): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe.skipIf(!hasChromium)('browsers: CORS preflight and origin binding in Chromium', () => {
  let mock: MockProvider;
  let dataDir: string;
  let server: RunningServer;
  let browser: Browser;
  let dispatcher: Agent;
  let apiKey = '';
  let token = '';
  const pages: Server[] = [];
  let allowedPort = 0;
  let otherPort = 0;

  const api = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const res = await request(`${server.apiUrl}${url}`, {
      method,
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    mock = await startMockProvider();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-browser-'));
    const config = await mockProviderConfig(dataDir, mock);
    const printed: string[] = [];
    server = await startServer(config, {
      env: {},
      logger: createLogger('silent'),
      print: (line) => printed.push(line),
    });
    apiKey = /svc_sk_\w+/.exec(printed.join('\n'))?.[0] ?? '';
    dispatcher = new Agent({ connect: { rejectUnauthorized: false } });

    const allowed = await servePage(() => pageHtml(server.publicProxyUrl, token));
    const other = await servePage(() => pageHtml(server.publicProxyUrl, token));
    pages.push(allowed.server, other.server);
    allowedPort = allowed.port;
    otherPort = other.port;

    // Only pages served from localhost may use the token; 127.0.0.1 is another origin.
    const created = await api('POST', '/v1/tokens', {
      name: 'browser',
      provider: 'openai',
      real_key: REAL_KEY,
      allowed_hosts: [`http://localhost:${allowedPort}`],
    });
    expect(created.status).toBe(201);
    token = String(created.body.sanitized_key);

    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    for (const page of pages) page.close();
    await server?.close();
    await mock?.close();
    await dispatcher?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function runPage(origin: string) {
    // The proxy's certificate is self-signed; this context trusts it as a user would after checking
    // the printed fingerprint. Everything else about the request is the browser's own doing.
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const page = await context.newPage();
      await page.goto(`${origin}/`);
      return await page.evaluate(
        () =>
          (globalThis as unknown as { result: Promise<{ status: number; body: string; requestId: string }> })
            .result,
      );
    } finally {
      await context.close();
    }
  }

  it('a page on an allowed origin gets through the preflight and receives the answer', async () => {
    mock.reset();
    const result = await runPage(`http://localhost:${allowedPort}`);
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body)).toMatchObject({ object: 'chat.completion' });
    // The browser really sent a preflight (answered by the proxy, never forwarded) and then the call.
    const received = mock.received.map((r) => `${r.method} ${r.path}`);
    expect(received).toEqual(['POST /v1/chat/completions']);
    expect(mock.received[0]?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
    expect(mock.received[0]?.headers.origin).toBeUndefined();
  });

  it('a page on another origin is refused, and the refusal is logged with authorized: false', async () => {
    mock.reset();
    const result = await runPage(`http://127.0.0.1:${otherPort}`);
    expect(result.status).toBe(403);
    expect(JSON.parse(result.body)).toMatchObject({
      error: { code: 'origin_not_allowed', type: 'tokenproxy_error' },
    });
    expect(result.body).not.toContain(REAL_KEY);
    expect(mock.received).toHaveLength(0);

    let entry: Record<string, unknown> | undefined;
    for (let i = 0; i < 50 && !entry; i++) {
      const logs = await api('GET', '/v1/logs?authorized=false');
      entry = (logs.body.data as Record<string, unknown>[]).find((r) => r.request_id === result.requestId);
      if (!entry) await new Promise((r) => setTimeout(r, 100));
    }
    expect(entry).toMatchObject({
      authorized: false,
      status: 403,
      origin: `http://127.0.0.1:${otherPort}`,
      path: '/openai/v1/chat/completions',
    });
  });
});
