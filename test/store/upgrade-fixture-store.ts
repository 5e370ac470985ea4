import { randomBytes } from 'node:crypto';
import { readdirSync, existsSync, readFileSync } from 'node:fs';
import { chmod, copyFile, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import pg from 'pg';
import { UPGRADE_KEYS } from '../support/upgrade-keys.js';

/**
 * The stores old builds wrote (test/fixtures/upgrade/): their manifests, and each restored to a
 * fresh place for upgrade-fixtures.test.ts.
 */

export const FIXTURES = fileURLToPath(new URL('../fixtures/upgrade/', import.meta.url));
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? '';

export type KeyName = keyof typeof UPGRADE_KEYS;
export interface Manifest {
  commit: string;
  dialect: 'sqlite' | 'postgres';
  api_key: string;
  account_id: string;
  migrations: string[];
  keys: Record<string, { key_id: string; real_key: KeyName; idempotency_key?: string }>;
  tokens: Record<
    'bound' | 'own' | 'revoked' | 'expired',
    { token_id: string; sanitized_key: string; key_id: string; expect: 'active' | 'revoked' | 'expired' }
  >;
  requests: { label: string; status: number; code: string | null; request_id: string | null }[];
  features: Record<'webhooks' | 'idempotency' | 'proxy' | 'logs' | 'events' | 'session', boolean>;
  webhook?: { webhook_id: string; secret: string };
  session_cookie?: string;
  before: {
    tokens: { data: Record<string, unknown>[] };
    keys: { data: Record<string, unknown>[] };
    logs: { data: Record<string, unknown>[] } | null;
    anomalies: { data: Record<string, unknown>[] } | null;
    events: { data: Record<string, unknown>[] } | null;
  };
}

export const fixtureDirs = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(path.join(FIXTURES, entry.name, 'manifest.json')))
  .map((entry) => entry.name)
  .sort();

export async function pgAdmin<T>(
  run: (client: pg.Client) => Promise<T>,
  url = TEST_DATABASE_URL,
): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

function databaseUrl(name: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The fixture's store in a fresh place: a temp data dir, and for PostgreSQL a fresh database. */
export async function restore(dir: string, manifest: Manifest, dataDir: string): Promise<string | undefined> {
  await copyFile(path.join(dir, 'master.key'), path.join(dataDir, 'master.key'));
  await chmod(path.join(dataDir, 'master.key'), 0o600);
  if (manifest.dialect === 'sqlite') {
    await writeFile(
      path.join(dataDir, 'tokenproxy.db'),
      gunzipSync(await readFile(path.join(dir, 'tokenproxy.db.gz'))),
    );
    return undefined;
  }
  const name = `tp_upg_${randomBytes(6).toString('hex')}`;
  await pgAdmin((client) => client.query(`CREATE DATABASE "${name}"`));
  const url = databaseUrl(name);
  await pgAdmin((client) => client.query(readFileSync(path.join(dir, 'dump.sql'), 'utf8')), url);
  return url;
}

/**
 * What the test harness changes in the old store before the start (SQL, never through tokenproxy):
 * the webhook's URL, because the old receiver's port is gone; and the idempotency record's expiry,
 * so the retry below counts as arriving within the key's 24 hours however old the fixture is.
 */
export async function adjust(
  dataDir: string,
  database: string | undefined,
  webhookUrl: string,
): Promise<void> {
  const statements = [
    { text: 'update webhooks set url = $1', values: [webhookUrl] },
    { text: 'update idempotency_keys set expires_at = $1', values: ['2999-01-01T00:00:00.000Z'] },
  ];
  if (database === undefined) {
    const db = new Database(path.join(dataDir, 'tokenproxy.db'));
    try {
      const tables = new Set(
        (db.prepare(`select name from sqlite_master where type = 'table'`).all() as { name: string }[]).map(
          (r) => r.name,
        ),
      );
      for (const { text, values } of statements) {
        if (tables.has(text.split(' ')[1] ?? '')) db.prepare(text.replace('$1', '?')).run(...values);
      }
    } finally {
      db.close();
    }
    return;
  }
  await pgAdmin(async (client) => {
    for (const { text, values } of statements) {
      const table = text.split(' ')[1] ?? '';
      const exists = await client.query('select to_regclass($1) as t', [`public.${table}`]);
      if ((exists.rows[0] as { t: string | null }).t !== null) await client.query(text, values);
    }
  }, database);
}
