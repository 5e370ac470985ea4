import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../src/server/start.js';

/**
 * Issue 18: the request id a caller got finds its record (GET /v1/logs/:request_id) and, for an
 * upstream failure, the server's warn line with the same id.
 */

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('finding what happened to a request from its request id', () => {
  let dataDir: string;
  let server: RunningServer | undefined;
  let dispatcher: Agent;
  let apiKey = '';
  const logLines: string[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-lookup-'));
    const configFile = path.join(dataDir, 'config.json');
    const port = await closedPort();
    await writeFile(
      configFile,
      JSON.stringify({ providers: { down: { base_url: `https://127.0.0.1:${port}`, auth: 'bearer' } } }),
    );
    const config = loadConfig({
      flags: { data_dir: dataDir, api_port: '0', proxy_port: '0' },
      env: {},
      configFile,
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

  it('a 502 request id finds its record and the warn line that explains it', async () => {
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
      name: 'lookup',
      provider: 'down',
      real_key: 'sk-lookup-real-key-0000000000',
      allowed_hosts: ['app.example.com'],
    });
    expect(created.status).toBe(201);

    const res = await request(`${running.proxyUrl}/down/v1/models`, {
      dispatcher,
      headers: {
        authorization: `Bearer ${String(created.json.sanitized_key)}`,
        origin: 'https://app.example.com',
      },
    });
    const answer = (await res.body.json()) as { error: { code: string } };
    expect(res.statusCode).toBe(502);
    expect(answer.error.code).toBe('upstream_unreachable');
    const requestId = res.headers['x-tokenproxy-request-id'];
    expect(requestId).toMatch(/^req_/);

    // Records are stored in batches by the log thread: poll until this one is there.
    let found: { status: number; json: Record<string, unknown> } | undefined;
    for (let i = 0; i < 100; i += 1) {
      found = await api('GET', `/v1/logs/${String(requestId)}`);
      if (found.status === 200) break;
      expect(found.json).toMatchObject({ error: { code: 'request_log_not_found' } });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(found?.status).toBe(200);
    expect(found?.json).toMatchObject({
      request_id: requestId,
      status: 502,
      error_code: 'upstream_unreachable',
      path: '/down/v1/models',
    });
    // The same record through the list's filters.
    const listed = await api('GET', `/v1/logs?error_code=upstream_unreachable&ip=127.0.0.1`);
    expect((listed.json.data as { request_id: string }[]).map((r) => r.request_id)).toEqual([requestId]);

    const warn = logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.request_id === requestId);
    expect(warn).toHaveLength(1);
    expect(warn[0]).toMatchObject({
      level: 'warn',
      msg: 'upstream request failed',
      provider: 'down',
      status: 502,
    });
    // The real key never reaches the log.
    expect(logLines.join('\n')).not.toContain('sk-lookup-real-key');
  }, 120_000);
});
