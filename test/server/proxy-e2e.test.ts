import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServerProcess } from '../support/cli.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { filesUnder } from '../support/files.js';
import { SPEC_LOG_FIELDS } from '../store/helpers.js';

const REAL_KEY = `sk-e2e-${Date.now()}-DISTINCT-real-key`;
const BODY_MARKER = `body-marker-${Date.now()}-never-logged`;

describe('the real binary end to end: a proxied request is forwarded, logged, counted and measured', () => {
  let mock: MockProvider;
  let dataDir: string;
  let server: ServerProcess;
  let dispatcher: Agent;
  let apiKey: string;
  let token: string;
  let tokenId: string;
  const responses: string[] = [];

  const api = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const res = await request(`${server.apiUrl}${url}`, {
      method,
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text();
    responses.push(text);
    return { status: res.statusCode, body: JSON.parse(text) as Record<string, unknown> };
  };

  beforeAll(async () => {
    mock = await startMockProvider();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-e2e-'));
    const work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-e2e-conf-'));
    await writeFile(path.join(work, 'ca.pem'), mock.caCertPem);
    await writeFile(
      path.join(work, 'config.json'),
      JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } }, pop: 'test-pop' }),
    );
    server = await startServe([
      '--data-dir',
      dataDir,
      '--config',
      path.join(work, 'config.json'),
      '--provider-ca',
      path.join(work, 'ca.pem'),
      '--log-requests',
      '--country-header',
      'cf-ipcountry',
      // The header is believed from the edge only: here the test, on loopback.
      '--trust-proxy',
      'loopback',
    ]);
    dispatcher = new Agent({
      connect: { ca: await readFile(path.join(dataDir, 'tls', 'cert.pem'), 'utf8') },
    });
    apiKey = /svc_sk_\w+/.exec(server.stderr())?.[0] ?? '';
    const created = await api('POST', '/v1/tokens', {
      name: 'e2e',
      provider: 'openai',
      real_key: REAL_KEY,
      allowed_hosts: ['app.example.com'],
    });
    expect(created.status).toBe(201);
    token = String(created.body.sanitized_key);
    tokenId = String(created.body.token_id);
    // The creation answer is the one place the sanitized token is meant to appear.
    expect(responses.pop()).not.toContain(REAL_KEY);
    expect(created.body.proxy_base_url).toBe(server.proxyUrl.replace('127.0.0.1', 'localhost') + '/openai');
  });

  afterAll(async () => {
    await server?.stop();
    await mock?.close();
    await dispatcher?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('forwards with the real key and logs both an authorized and a refused request', async () => {
    const send = async (origin: string) => {
      const res = await request(`${server.proxyUrl}/openai/v1/chat/completions?trace=1`, {
        method: 'POST',
        dispatcher,
        headers: {
          authorization: `Bearer ${token}`,
          origin,
          'content-type': 'application/json',
          'cf-ipcountry': 'de',
        },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: BODY_MARKER }] }),
      });
      const text = await res.body.text();
      responses.push(text, JSON.stringify(res.headers));
      return { status: res.statusCode, requestId: String(res.headers['x-tokenproxy-request-id']) };
    };
    const ok = await send('https://app.example.com');
    const refused = await send('https://evil.example');
    expect(ok.status).toBe(200);
    expect(refused.status).toBe(403);
    expect(mock.received).toHaveLength(1);
    expect(mock.received[0]?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
    expect(mock.received[0]?.path).toBe('/v1/chat/completions?trace=1');

    // Stored (in batches) and listed by the API.
    let logs: Record<string, unknown>[] = [];
    for (let i = 0; i < 50 && logs.length < 2; i++) {
      logs = (await api('GET', `/v1/logs?token_id=${tokenId}`)).body.data as Record<string, unknown>[];
      if (logs.length < 2) await new Promise((r) => setTimeout(r, 100));
    }
    expect(logs.map((r) => [r.request_id, r.status, r.authorized, r.error_code])).toEqual([
      [refused.requestId, 403, false, 'origin_not_allowed'],
      [ok.requestId, 200, true, null],
    ]);
    expect(logs[1]).toMatchObject({
      origin: 'https://app.example.com',
      ip: '127.0.0.1',
      country: 'DE',
      pop: 'test-pop',
      path: '/openai/v1/chat/completions',
      // Usage read from the mock's answer crossed the log worker and the store (issue 19).
      input_tokens: expect.any(Number) as number,
      output_tokens: expect.any(Number) as number,
    });
    expect(logs[0]).toMatchObject({
      model: null,
      input_tokens: null,
      output_tokens: null,
      cost_micros: null,
    });

    // The anomaly log has a batch writer of its own: its entry may land after the request records.
    let anomalies: Record<string, unknown>[] = [];
    for (let i = 0; i < 50 && anomalies.length === 0; i++) {
      anomalies = (await api('GET', '/v1/anomalies')).body.data as Record<string, unknown>[];
      if (anomalies.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(anomalies).toEqual([
      expect.objectContaining({
        token_id: tokenId,
        origin: 'https://evil.example',
        reason: 'origin_not_allowed',
      }),
    ]);

    // Only the forwarded request counts toward the token and the account. The counts are written as
    // batches of their own, apart from the log rows: wait until they land, then for nothing more.
    const counted = async () => {
      const got = (await api('GET', `/v1/tokens/${tokenId}`)).body;
      const account = (await api('GET', '/v1/account')).body.usage as Record<string, number>;
      return { token: got.request_count, used: typeof got.last_used_at, account: account.requests };
    };
    await expect.poll(counted, { timeout: 5_000 }).toEqual({ token: 1, used: 'string', account: 1 });
    await new Promise((r) => setTimeout(r, 500));
    expect(await counted()).toEqual({ token: 1, used: 'string', account: 1 });

    // --log-requests printed the same records as JSON lines with the specification's fields.
    const lines = server
      .stdout()
      .split('\n')
      .filter((l) => l.includes('"latency_ms"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const line = lines.find((l) => l.request_id === ok.requestId);
    expect(Object.keys(line ?? {}).sort()).toEqual(
      [
        ...SPEC_LOG_FIELDS,
        'request_id',
        'error_code',
        'model',
        'input_tokens',
        'output_tokens',
        'cost_micros',
        'level',
        'time',
        'service',
        'msg',
      ].sort(),
    );
    expect(line).toMatchObject({ level: 'info', service: 'tokenproxy', msg: 'request', error_code: null });
  });

  it('serves Prometheus metrics with provider and status labels only', async () => {
    const res = await request(`${server.apiUrl}/metrics`, { dispatcher });
    const text = await res.body.text();
    expect(res.statusCode).toBe(200);
    expect(text).toMatch(/tokenproxy_proxy_requests_total\{provider="openai",status="200"\} 1/);
    expect(text).toMatch(/tokenproxy_proxy_requests_total\{provider="openai",status="403"\} 1/);
    expect(text).toContain('tokenproxy_proxy_added_latency_seconds_bucket');
    expect(text).not.toContain('evil.example');
    expect(text).not.toContain(tokenId);
  });

  it('the real key, the token and the request body appear in no output, file or response', async () => {
    await server.stop();
    const outputs = [server.stdout(), server.stderr(), ...responses].join('\n');
    for (const secret of [REAL_KEY, BODY_MARKER, token]) expect(outputs).not.toContain(secret);
    for (const file of await filesUnder(dataDir)) {
      const bytes = await readFile(file);
      for (const secret of [REAL_KEY, BODY_MARKER, token]) {
        expect(bytes.includes(Buffer.from(secret)), `${secret} in ${file}`).toBe(false);
        expect(bytes.includes(Buffer.from(Buffer.from(secret).toString('base64'))), file).toBe(false);
      }
    }
  });
});
