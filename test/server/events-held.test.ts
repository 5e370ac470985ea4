import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../src/server/start.js';
import { until } from '../support/poll.js';
import { storeDb } from '../support/store-internals.js';

/**
 * A breach alert is raised once, on the proxy path, with no caller to retry it. A real server whose
 * store refuses writes for a while (read-only, as a full disk's refusal) still records it once the
 * store takes writes again: it was lost, with a log line, before.
 */
describe('a breach alert raised while the store refuses writes', () => {
  let dataDir: string;
  let server: RunningServer | undefined;
  let dispatcher: Agent;
  let apiKey = '';
  const logLines: string[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-events-held-'));
    const config = loadConfig({
      flags: { data_dir: dataDir, api_port: '0', proxy_port: '0' },
      env: {},
      configFile: undefined,
    });
    const printed: string[] = [];
    server = await startServer(config, {
      env: {},
      logger: createLogger('info', { write: (line: string) => void logLines.push(line) }),
      print: (line) => printed.push(line),
    });
    apiKey = /svc_sk_\w+/.exec(printed.join('\n'))?.[0] ?? '';
    dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await dispatcher?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('is stored, and listed, once the store takes writes again', async () => {
    const running = server as RunningServer;
    const api = async (method: string, url: string, body?: unknown) => {
      const res = await request(`${running.apiUrl}${url}`, {
        method: method as 'GET',
        dispatcher,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
    };
    const created = await api('POST', '/v1/tokens', {
      name: 'held',
      provider: 'openai',
      real_key: 'sk-events-held-real-key-000000000',
      allowed_hosts: ['app.example.com'],
    });
    expect(created.status).toBe(201);
    const breaches = async () =>
      ((await api('GET', '/v1/events?type=breach.detected')).json.data as unknown[]).length;

    const readOnly = (on: boolean) =>
      sql.raw(`pragma query_only = ${on ? 'on' : 'off'}`).execute(storeDb(running.store));
    await readOnly(true);
    const refused = await request(`${running.proxyUrl}/openai/v1/models`, {
      dispatcher,
      headers: {
        authorization: `Bearer ${String(created.json.sanitized_key)}`,
        origin: 'https://evil.example',
      },
    });
    await refused.body.dump();
    expect(refused.statusCode).toBe(403);
    // Reads still work: the alert is not there while every write is refused.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await breaches()).toBe(0);

    await readOnly(false);
    await until('the held breach alert to be stored', async () => (await breaches()) === 1, {
      timeoutMs: 10_000,
    });
    const [event] = (await api('GET', '/v1/events?type=breach.detected')).json.data as {
      data: Record<string, unknown>;
    }[];
    expect(event?.data).toMatchObject({ origin: 'https://evil.example', reason: 'origin_not_allowed' });
    expect(logLines.join('\n')).not.toContain('breach.detected not recorded');
  }, 60_000);

  it('a stop while the store still refuses gives the held alert up at once, with one line', async () => {
    const running = server as RunningServer;
    const created = await request(`${running.apiUrl}/v1/tokens`, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'held at stop',
        provider: 'openai',
        real_key: 'sk-events-held-real-key-000000000',
        allowed_hosts: ['app.example.com'],
      }),
    });
    const token = ((await created.body.json()) as { sanitized_key: string }).sanitized_key;
    await sql.raw('pragma query_only = on').execute(storeDb(running.store));
    const refused = await request(`${running.proxyUrl}/openai/v1/models`, {
      dispatcher,
      headers: { authorization: `Bearer ${token}`, origin: 'https://evil.example' },
    });
    await refused.body.dump();
    expect(refused.statusCode).toBe(403);
    await new Promise((r) => setTimeout(r, 300)); // the alert's first write refused: held
    const before = logLines.length;
    await running.close();
    const stopping = logLines.slice(before).join('\n');
    expect(stopping).toContain('events not recorded at shutdown');
    // The breach handler did not wait its drain deadline on the held alert.
    expect(stopping).not.toContain('not all recorded in time');
  }, 60_000);
});
