import { mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServe, type ServerProcess } from '../support/cli.js';

/**
 * `tokenproxy.db` moved away or replaced (a backup restored over it) under a running server: SQLite
 * goes on with the file it opened, outside the data dir, and all it stores is lost when the server
 * stops. The real server on a real file notices within seconds: one error line saying what happened
 * and what to do, /readyz 503 naming it, changes refused with a 503 rather than acknowledged and
 * lost; a file moved back is served again, and a restart serves the restored backup.
 */
const API_KEY_RE = /svc_sk_[1-9A-HJ-NP-Za-km-z]{43}/;
const KEY = { provider: 'openai', real_key: 'sk-file-replaced-test-0123456789' };
/** Two looks of the watch (2 s apart) and some room. */
const NOTICED_MS = 10_000;

interface Answer {
  readonly status: number;
  readonly body: { error: Record<string, string> } & Record<string, unknown>;
}

describe('a SQLite store file moved or replaced under the running server', () => {
  let dataDir: string;
  let file: string;
  let server: ServerProcess;
  let dispatcher: Agent;
  let apiKey: string;

  async function start(): Promise<void> {
    server = await startServe(['--data-dir', dataDir]);
    dispatcher = new Agent({
      connect: { ca: await readFile(path.join(dataDir, 'tls', 'cert.pem'), 'utf8') },
    });
  }

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-file-replaced-'));
    file = path.join(dataDir, 'tokenproxy.db');
    await start();
    apiKey = API_KEY_RE.exec(server.stderr())?.[0] ?? '';
  });
  afterAll(async () => {
    await server?.stop();
    await dispatcher?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function call(method: string, url: string, body?: unknown): Promise<Answer> {
    const res = await request(`${server.apiUrl}${url}`, {
      method: method as 'GET',
      dispatcher,
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: (text === '' ? {} : JSON.parse(text)) as Answer['body'] };
  }

  async function keyNames(): Promise<string[]> {
    const listed = await call('GET', '/v1/keys?limit=100');
    expect(listed.status).toBe(200);
    return (listed.body as unknown as { data: { name: string }[] }).data.map((k) => k.name).sort();
  }

  /** JSON log lines (stdout) at `error` level saying `words`. */
  function errorLines(words: string): unknown[] {
    return server
      .stdout()
      .split('\n')
      .filter((line) => line.includes(words))
      .map((line) => JSON.parse(line) as { level: unknown })
      .filter((line) => line.level === 50 || line.level === 'error');
  }

  it('a file moved away: noticed, changes refused, /readyz 503; moved back, all goes on and nothing is lost', async () => {
    expect((await call('POST', '/v1/keys', { name: 'before', ...KEY })).status).toBe(201);
    await rename(file, `${file}.moved`);
    await vi.waitFor(
      async () => expect((await call('GET', '/readyz')).body).toEqual({ status: 'store_file_missing' }),
      { timeout: NOTICED_MS, interval: 200 },
    );
    expect((await call('GET', '/readyz')).status).toBe(503);
    const refused = await call('POST', '/v1/keys', { name: 'while moved', ...KEY });
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ type: 'internal', code: 'store_unavailable' });
    expect(refused.body.error.message).toContain('deleted or moved away');
    expect(refused.body.error.message).toContain('nothing was changed');
    // Reading goes on, from the file the server has open.
    expect(await keyNames()).toEqual(['before']);
    // The log line reaches this process through the child's stdout pipe, which may deliver it after
    // the HTTP answer that saw the same state: waited for, then counted.
    await vi.waitFor(
      () => expect(errorLines('was deleted or moved away while the server runs')).toHaveLength(1),
      {
        timeout: NOTICED_MS,
      },
    );
    const lines = errorLines('was deleted or moved away while the server runs');
    expect(lines).toHaveLength(1);
    expect(JSON.stringify(lines[0])).toContain('Move the file back');

    await rename(`${file}.moved`, file);
    await vi.waitFor(async () => expect((await call('GET', '/readyz')).body).toEqual({ status: 'ready' }), {
      timeout: NOTICED_MS,
      interval: 200,
    });
    await vi.waitFor(() => expect(server.stdout()).toContain('changes are accepted again'), {
      timeout: NOTICED_MS,
    });
    expect((await call('POST', '/v1/keys', { name: 'after', ...KEY })).status).toBe(201);
    expect(await keyNames()).toEqual(['after', 'before']);
  });

  it('a backup restored over it: noticed and refused; after a restart (the old -wal removed) the backup is served', async () => {
    // A consistent copy, taken as an operator would (SQLite's backup), then a change it lacks.
    const reader = new SqliteDatabase(file, { readonly: true });
    try {
      await reader.backup(`${file}.backup`);
    } finally {
      reader.close();
    }
    expect((await call('POST', '/v1/keys', { name: 'after backup', ...KEY })).status).toBe(201);
    await rename(`${file}.backup`, file);
    await vi.waitFor(
      async () => expect((await call('GET', '/readyz')).body).toEqual({ status: 'store_file_replaced' }),
      { timeout: NOTICED_MS, interval: 200 },
    );
    const refused = await call('POST', '/v1/keys', { name: 'while replaced', ...KEY });
    expect(refused.status).toBe(503);
    expect(refused.body.error.message).toContain('replaced');
    await vi.waitFor(
      () => expect(errorLines('was replaced by another file while the server runs')).toHaveLength(1),
      {
        timeout: NOTICED_MS,
      },
    );
    const lines = errorLines('was replaced by another file while the server runs');
    expect(lines).toHaveLength(1);
    expect(JSON.stringify(lines[0])).toContain(`remove ${file}-wal`);

    // What the error line says to do.
    expect(await server.stop()).toBe(0);
    await dispatcher.close();
    await rm(`${file}-wal`, { force: true });
    await rm(`${file}-shm`, { force: true });
    await start();
    expect((await call('GET', '/readyz')).body).toEqual({ status: 'ready' });
    expect(await keyNames()).toEqual(['after', 'before']);
    expect((await call('POST', '/v1/keys', { name: 'restored', ...KEY })).status).toBe(201);
  });
});
