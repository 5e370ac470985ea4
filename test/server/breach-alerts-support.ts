import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { expect } from 'vitest';
import { startSmtpSink, type SmtpSink } from '../events/support.js';
import type { ServerProcess } from '../support/cli.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';

/** What the breach-alert tests of the real binary share: a provider, an SMTP sink and a config. */
export interface AlertWorld {
  readonly smtp: SmtpSink;
  readonly dataDir: string;
  /** `serve`'s arguments: this world's data dir, config (SMTP, trust_proxy loopback) and provider CA. */
  readonly args: readonly string[];
  close(): Promise<void>;
}

export async function startAlertWorld(name: string): Promise<AlertWorld> {
  let mock: MockProvider | undefined;
  let smtp: SmtpSink | undefined;
  const dirs: string[] = [];
  const close = async () => {
    await Promise.all([mock?.close(), smtp?.close()]);
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  };
  try {
    [mock, smtp] = await Promise.all([startMockProvider(), startSmtpSink()]);
    const dataDir = await mkdtemp(path.join(os.tmpdir(), `tokenproxy-${name}-`));
    dirs.push(dataDir);
    const work = await mkdtemp(path.join(os.tmpdir(), `tokenproxy-${name}-conf-`));
    dirs.push(work);
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
    const args = [
      '--data-dir',
      dataDir,
      '--config',
      path.join(work, 'config.json'),
      '--provider-ca',
      path.join(work, 'ca.pem'),
    ];
    return { smtp, dataDir, args, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A client of one running server: its own TLS trust, its first API key. */
export interface AlertClient {
  /** Sets the account's alert e-mail and creates a token allowed only for app.example.com. */
  attackedToken(name: string): Promise<string>;
  /** One request per address 192.0.2.1…n from a forbidden origin; each must be refused 403. */
  refuseFrom(token: string, addresses: number): Promise<void>;
  close(): Promise<void>;
}

export async function alertClient(server: ServerProcess, dataDir: string): Promise<AlertClient> {
  const dispatcher = new Agent({
    connect: { ca: await readFile(path.join(dataDir, 'tls', 'cert.pem'), 'utf8') },
  });
  const apiKey = /svc_sk_\w+/.exec(server.stderr())?.[0] ?? '';
  const api = async (method: 'POST' | 'PATCH', url: string, body: unknown) => {
    const res = await request(`${server.apiUrl}${url}`, {
      method,
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };
  return {
    async attackedToken(name) {
      expect((await api('PATCH', '/v1/account', { alert_email: 'owner@example.com' })).status).toBe(200);
      const created = await api('POST', '/v1/tokens', {
        name,
        provider: 'openai',
        real_key: `sk-${name}-real-key-0000000000000`,
        allowed_hosts: ['app.example.com'],
      });
      expect(created.status).toBe(201);
      return String(created.body.sanitized_key);
    },
    async refuseFrom(token, addresses) {
      for (let i = 1; i <= addresses; i++) {
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
    },
    close: () => dispatcher.close(),
  };
}
