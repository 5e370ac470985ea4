import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { hasChromium, launchChromium } from '../support/chromium.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, type DatabaseFixture } from '../support/databases.js';
import { startGatedUpstream, type GatedUpstream } from '../support/gated-upstream.js';
import { startProxyHarness, type ProxyHarness } from '../proxy/harness.js';

const STREAMS = 10;
/** How long the test waits for all ten first chunks before it lets the upstream finish anyway. */
const FALLBACK_MS = 15_000;

const found = databases.find((d) => d.name === 'sqlite');
if (found === undefined) throw new Error('no sqlite fixture');
const sqlite: DatabaseFixture = found;

/**
 * A page that opens STREAMS streamed completions at once, as a chat app with several panes would,
 * and logs, in order, when each one got its first chunk and when it ended.
 */
function pageHtml(proxyUrl: string, token: string): string {
  return `<!doctype html><meta charset="utf-8"><title>app</title><script>
    window.events = [];
    window.done = Promise.all(Array.from({ length: ${STREAMS} }, async (_, i) => {
      const res = await fetch(${JSON.stringify(`${proxyUrl}/gated/v1/chat/completions`)}, {
        method: 'POST',
        headers: { authorization: 'Bearer ${token}', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi ' + i }] }),
      });
      const reader = res.body.getReader();
      let first = true;
      for (;;) {
        const { done } = await reader.read();
        if (done) break;
        if (first) window.events.push('first ' + i);
        first = false;
      }
      window.events.push('end ' + i);
      return res.status;
    }));
  </script>`;
}

/**
 * Browsers open at most six HTTP/1.1 connections per origin; over HTTP/2 they multiplex every stream
 * on one connection. The upstream holds every stream open after its first chunk until the page has
 * seen ten first chunks (or FALLBACK_MS passed), so over HTTP/2 all ten see their first chunk before
 * any ends, and over HTTP/1.1 the seventh cannot start until one of the six has ended.
 */
describe.skipIf(!hasChromium)('browsers: ten concurrent streams from one page', () => {
  let browser: Browser;
  let gated: GatedUpstream;
  let page: Server;
  let pagePort = 0;
  const harnesses: ProxyHarness[] = [];

  beforeAll(async () => {
    gated = await startGatedUpstream({ fallbackMs: 4 * FALLBACK_MS });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    page?.close();
    for (const h of harnesses) await h.close();
    await gated?.close();
  });

  async function run(http2: boolean): Promise<{ events: string[]; statuses: number[]; versions: string[] }> {
    const h = await startProxyHarness(sqlite, {
      http2,
      config: { upstreamBodyTimeoutMs: 4 * FALLBACK_MS },
      extraCaPem: gated.caCertPem,
      providers: () => [{ id: 'gated', baseUrl: gated.url, auth: { kind: 'bearer' }, builtin: false }],
    });
    harnesses.push(h);
    page?.close();
    const { token } = await h.createToken({ provider: 'gated', allowedHosts: ['localhost'] });
    page = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(pageHtml(h.url, token));
    });
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    pagePort = (page.address() as AddressInfo).port;
    gated.reset();
    // The proxy's certificate is self-signed: this context trusts it, as a user would after checking
    // the printed fingerprint.
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const tab = await context.newPage();
      await tab.goto(`http://localhost:${pagePort}/`);
      // The upstream holds every stream after its first chunk; it is released once the page has
      // seen all ten first chunks, or after FALLBACK_MS (HTTP/1.1: only six can ever start).
      const deadline = Date.now() + FALLBACK_MS;
      const firsts = (): Promise<number> =>
        tab.evaluate(
          () =>
            (globalThis as unknown as { events: string[] }).events.filter((e) => e.startsWith('first '))
              .length,
        );
      while ((await firsts()) < STREAMS && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      gated.release();
      const statuses = await tab.evaluate(() => (globalThis as unknown as { done: Promise<number[]> }).done);
      const events = await tab.evaluate(() => (globalThis as unknown as { events: string[] }).events);
      const versions = h.httpVersions.slice();
      return { events, statuses, versions };
    } finally {
      await context.close();
    }
  }

  const firstEnd = (events: string[]): number => events.findIndex((e) => e.startsWith('end '));
  const lastFirst = (events: string[]): number =>
    events.reduce((at, e, i) => (e.startsWith('first ') ? i : at), -1);

  it('over HTTP/2 all ten receive their first chunk before any of them completes', async () => {
    const { events, statuses, versions } = await run(true);
    expect(statuses).toEqual(Array.from({ length: STREAMS }, () => 200));
    expect(events.filter((e) => e.startsWith('first '))).toHaveLength(STREAMS);
    expect(lastFirst(events)).toBeLessThan(firstEnd(events));
    expect(versions.filter((v) => v !== '2.0')).toEqual([]);
    expect(gated.maxOpen).toBe(STREAMS);
  }, 120_000);

  it('over HTTP/1.1 (h2 disabled) the six-connection wall shows: a stream ends before the last one starts', async () => {
    const { events, statuses, versions } = await run(false);
    expect(statuses).toEqual(Array.from({ length: STREAMS }, () => 200));
    expect(versions.filter((v) => v !== '1.1')).toEqual([]);
    expect(firstEnd(events)).toBeLessThan(lastFirst(events));
    expect(gated.maxOpen).toBeLessThanOrEqual(6);
  }, 120_000);
});
