import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeQuotedPrintable, startSmtpSink, type SmtpSink } from '../events/support.js';
import { startServe, type ServerProcess } from '../support/cli.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';

const ADDRESSES = 60;

describe('the real binary: rotating client addresses cannot flood the alert inbox', () => {
  let mock: MockProvider;
  let smtp: SmtpSink;
  let dataDir: string;
  let work: string;
  let server: ServerProcess;
  let dispatcher: Agent;
  let apiKey: string;

  const api = async (method: 'POST' | 'PATCH', url: string, body: unknown) => {
    const res = await request(`${server.apiUrl}${url}`, {
      method,
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    [mock, smtp] = await Promise.all([startMockProvider(), startSmtpSink()]);
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-alerts-'));
    work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-alerts-conf-'));
    await writeFile(path.join(work, 'ca.pem'), mock.caCertPem);
    await writeFile(
      path.join(work, 'config.json'),
      JSON.stringify({
        providers: { openai: { base_url: mock.url, auth: 'bearer' } },
        // Loopback is the trusted proxy, so each request names its client in X-Forwarded-For.
        trust_proxy: 'loopback',
        smtp_url: smtp.url,
      }),
    );
    server = await startServe([
      '--data-dir',
      dataDir,
      '--config',
      path.join(work, 'config.json'),
      '--provider-ca',
      path.join(work, 'ca.pem'),
    ]);
    dispatcher = new Agent({
      connect: { ca: await readFile(path.join(dataDir, 'tls', 'cert.pem'), 'utf8') },
    });
    apiKey = /svc_sk_\w+/.exec(server.stderr())?.[0] ?? '';
  });

  afterAll(async () => {
    await server?.stop();
    await Promise.all([mock?.close(), smtp?.close(), dispatcher?.close()]);
    for (const dir of [dataDir, work]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('60 refused requests from 60 addresses: 3 alert e-mails, then one summary of the other 57', async () => {
    expect((await api('PATCH', '/v1/account', { alert_email: 'owner@example.com' })).status).toBe(200);
    const created = await api('POST', '/v1/tokens', {
      name: 'rotated',
      provider: 'openai',
      real_key: 'sk-alerts-e2e-real-key-0000000000',
      allowed_hosts: ['app.example.com'],
    });
    expect(created.status).toBe(201);
    const token = String(created.body.sanitized_key);
    for (let i = 1; i <= ADDRESSES; i++) {
      const res = await request(`${server.proxyUrl}/openai/v1/models`, {
        dispatcher,
        headers: {
          authorization: `Bearer ${token}`,
          origin: 'https://evil.example',
          'x-forwarded-for': `192.0.2.${i}`,
        },
      });
      await res.body.text();
      expect(res.statusCode).toBe(403);
    }
    // The summary leaves when the minute of the capped alerts is over (plus the flush and the poll).
    const mails = await smtp.waitFor(4, 100_000);
    const texts = mails.map((m) => decodeQuotedPrintable(m.raw));
    // The first three, in whatever order the e-mail lane sent them.
    const first = texts.slice(0, 3);
    for (const n of [1, 2, 3]) {
      const ip = new RegExp(`192\\.0\\.2\\.${n}(?!\\d)`);
      expect(
        first.filter((text) => ip.test(text)),
        `192.0.2.${n}`,
      ).toHaveLength(1);
    }
    const summary = texts[3] ?? '';
    expect(summary).toContain('refused 57 more requests');
    expect(summary).toContain('57, among them: 192.0.2.4, 192.0.2.5');
    expect(summary).toContain('1: https://evil.example');
    expect(summary).not.toContain(token);
    // Nothing else was sent for these 60 requests.
    expect(smtp.messages).toHaveLength(4);
  }, 150_000);
});
