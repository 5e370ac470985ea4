import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Agent, request } from 'undici';
import { startServe, type ServerProcess } from '../support/cli.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';

/**
 * A data dir (and, for PostgreSQL, a database) behind the real binary, with the mock provider as
 * `openai`: what the KEK tests start, stop and restart with different KEK settings.
 */
export interface KekWorld {
  readonly mock: MockProvider;
  readonly dataDir: string;
  /** `--database` for PostgreSQL, absent for SQLite. */
  readonly database: string | undefined;
  /** The serve arguments every start of this world uses (data dir, config, CA, database). */
  readonly args: string[];
  cleanup(): Promise<void>;
}

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? '';

export async function createWorld(dialect: 'sqlite' | 'postgres'): Promise<KekWorld> {
  const mock = await startMockProvider();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-kek-'));
  const work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-kek-conf-'));
  await writeFile(path.join(work, 'ca.pem'), mock.caCertPem);
  await writeFile(
    path.join(work, 'config.json'),
    JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } } }),
  );
  let database: string | undefined;
  let dbName: string | undefined;
  if (dialect === 'postgres') {
    dbName = `tp_kek_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6).toString(36)}`;
    await admin((c) => c.query(`CREATE DATABASE "${dbName}"`));
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${dbName}`;
    database = url.toString();
  }
  const args = [
    '--data-dir',
    dataDir,
    '--config',
    path.join(work, 'config.json'),
    '--provider-ca',
    path.join(work, 'ca.pem'),
    ...(database === undefined ? [] : ['--database', database]),
  ];
  return {
    mock,
    dataDir,
    database,
    args,
    async cleanup() {
      await mock.close();
      await rm(dataDir, { recursive: true, force: true });
      await rm(work, { recursive: true, force: true });
      if (dbName !== undefined)
        await admin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
    },
  };
}

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/**
 * Everything a KEK start could have written: the SQLite file's bytes, or every row of every table
 * (as text) in PostgreSQL. Two equal snapshots mean nothing was written.
 */
export async function storeSnapshot(world: KekWorld): Promise<string> {
  if (world.database === undefined) {
    const bytes = await readFile(path.join(world.dataDir, 'tokenproxy.db'));
    return createHash('sha256').update(bytes).digest('hex');
  }
  const client = new pg.Client({ connectionString: world.database });
  await client.connect();
  try {
    const tables = await client.query<{ tablename: string }>(
      `select tablename from pg_tables where schemaname = 'public' order by tablename`,
    );
    const parts: string[] = [];
    for (const { tablename } of tables.rows) {
      const rows = await client.query(`select t::text as row from "${tablename}" t order by 1`);
      parts.push(tablename, ...rows.rows.map((r: { row: string }) => r.row));
    }
    return createHash('sha256').update(parts.join('\n')).digest('hex');
  } finally {
    await client.end();
  }
}

/** A running server with an account API key and a client that trusts its certificate. */
export interface Session {
  readonly server: ServerProcess;
  readonly apiKey: string;
  readonly dispatcher: Agent;
  api(
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  /** One proxied chat completion with `token` from an authorized origin; resolves to the status. */
  proxy(token: string): Promise<{ status: number; body: string }>;
  stop(): Promise<number | null>;
}

export async function startSession(
  world: KekWorld,
  env: Record<string, string | undefined>,
  apiKey?: string,
  extraArgs: string[] = [],
): Promise<Session> {
  const server = await startServe([...world.args, ...extraArgs], env);
  const dispatcher = new Agent({
    connect: { ca: await readFile(path.join(world.dataDir, 'tls', 'cert.pem'), 'utf8') },
  });
  const key = apiKey ?? /svc_sk_\w+/.exec(server.stderr())?.[0] ?? '';
  return {
    server,
    apiKey: key,
    dispatcher,
    async api(method, url, body) {
      const res = await request(`${server.apiUrl}${url}`, {
        method,
        dispatcher,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.body.text();
      return {
        status: res.statusCode,
        body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
      };
    },
    async proxy(token) {
      const res = await request(`${server.proxyUrl}/openai/v1/chat/completions`, {
        method: 'POST',
        dispatcher,
        headers: {
          authorization: `Bearer ${token}`,
          origin: 'https://app.example.com',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
      });
      return { status: res.statusCode, body: await res.body.text() };
    },
    async stop() {
      const code = await server.stop();
      await dispatcher.close();
      return code;
    },
  };
}

/** Creates a token for `realKey`; returns the sanitized token and ids. */
export async function createToken(
  session: Session,
  realKey: string,
): Promise<{ token: string; tokenId: string; keyId: string }> {
  const created = await session.api('POST', '/v1/tokens', {
    name: 'kek',
    provider: 'openai',
    real_key: realKey,
    allowed_hosts: ['app.example.com'],
  });
  if (created.status !== 201)
    throw new Error(`token creation answered ${created.status}: ${JSON.stringify(created.body)}`);
  return {
    token: String(created.body.sanitized_key),
    tokenId: String(created.body.token_id),
    keyId: String(created.body.real_key_ref),
  };
}
