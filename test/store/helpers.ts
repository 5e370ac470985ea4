import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { expect } from 'vitest';
import { randomBase58 } from '../../src/ids/base58.js';
import {
  apiKeyStart,
  newApiKey,
  newId,
  newSanitizedToken,
  newTokenId,
  sanitizedKeyHint,
  secretDigest,
} from '../../src/ids/formats.js';
import type {
  AccountRecord,
  AnomalyEntry,
  Page,
  PageAfter,
  PageQuery,
  PlanName,
  RequestLogEntry,
  TokenRecord,
} from '../../src/store/records.js';
import type { Database } from '../../src/store/schema.js';
import type { NewProviderKey, NewToken, Store, TokenCreation } from '../../src/store/store.js';
import type { OpenedDatabase } from '../support/databases.js';

export const T0 = '2026-01-01T00:00:00.000Z';

/** T0 plus `seconds`, as the store's ISO text. */
export function at(seconds: number): string {
  return new Date(Date.parse(T0) + seconds * 1000).toISOString();
}

export async function newAccount(
  store: Store,
  plan: PlanName = 'free',
): Promise<{ account: AccountRecord; apiKey: string }> {
  const apiKey = newApiKey();
  const account = await store.accounts.create({
    id: newId('account'),
    name: 'Acme',
    plan,
    createdAt: T0,
    apiKeyDigest: secretDigest(apiKey),
    apiKeyStart: apiKeyStart(apiKey),
  });
  return { account, apiKey };
}

export function keyInput(accountId: string, overrides: Partial<NewProviderKey> = {}): NewProviderKey {
  return {
    id: newId('key'),
    accountId,
    name: 'main',
    provider: 'openai',
    hint: 'wxyz',
    // Random bytes long enough that finding them in a database file cannot be a coincidence.
    ciphertext: randomBytes(64),
    createdAt: T0,
    ...overrides,
  };
}

export function tokenInput(
  accountId: string,
  overrides: Partial<NewToken> = {},
): NewToken & { secret: string } {
  const secret = newSanitizedToken();
  return {
    id: newTokenId(),
    accountId,
    name: 'web',
    provider: 'openai',
    digest: secretDigest(secret),
    hint: sanitizedKeyHint(secret),
    authorizedOrigins: ['https://app.example'],
    authorizedIps: [],
    rateLimit: null,
    expiresAt: null,
    createdAt: T0,
    secret,
    ...overrides,
  };
}

/** Creates a token; with no `keyId`, a new key comes with it. */
export function createToken(
  store: Store,
  accountId: string,
  options: { keyId?: string; max?: number | null; token?: Partial<NewToken> } = {},
): Promise<TokenRecord> {
  const token = tokenInput(accountId, options.token);
  const creation: TokenCreation = {
    token,
    key:
      options.keyId === undefined
        ? { newKey: keyInput(accountId, { provider: token.provider, createdAt: token.createdAt }) }
        : { existingKeyId: options.keyId },
    maxActiveTokens: options.max === undefined ? null : options.max,
  };
  return store.tokens.create(creation);
}

/**
 * A statement run on a connection of its own, beside the store: for state the Store interface
 * cannot reach (revoked API keys, usage rows) and for checking what really sits in the database.
 * Placeholders are `?` for both dialects.
 */
export async function rawQuery(
  dialect: 'sqlite' | 'postgres',
  opened: OpenedDatabase,
  text: string,
  params: readonly unknown[] = [],
): Promise<Record<string, unknown>[]> {
  if (dialect === 'sqlite') {
    const connection = new SqliteDatabase(path.join(opened.dataDir, 'tokenproxy.db'), { timeout: 5000 });
    try {
      const statement = connection.prepare(text);
      if (statement.reader) return statement.all(...params) as Record<string, unknown>[];
      statement.run(...params);
      return [];
    } finally {
      connection.close();
    }
  }
  let index = 0;
  const client = new pg.Client({ connectionString: opened.database });
  await client.connect();
  try {
    const result = await client.query<Record<string, unknown>>(
      text.replace(/\?/g, () => `$${String(++index)}`),
      [...params],
    );
    return result.rows;
  } finally {
    await client.end();
  }
}

/** The request-log field names of specification §2.5. */
export const SPEC_LOG_FIELDS: readonly string[] = [
  'timestamp',
  'token_id',
  'origin',
  'ip',
  'country',
  'pop',
  'path',
  'status',
  'authorized',
  'latency_ms',
];

let logSequence = 0;

/** A unique request id; ids made later sort later, which keeps expected orders easy to write. */
export function requestId(): string {
  logSequence += 1;
  return `req_${String(logSequence).padStart(8, '0')}${randomBase58(14)}`;
}

export function requestLogEntry(overrides: Partial<RequestLogEntry> = {}): RequestLogEntry {
  return {
    id: requestId(),
    timestamp: T0,
    accountId: null,
    tokenId: null,
    provider: 'openai',
    origin: 'https://app.example',
    ip: '203.0.113.7',
    country: 'DE',
    pop: 'fra1',
    path: '/openai/v1/chat/completions',
    status: 200,
    authorized: true,
    latencyMs: 1,
    errorCode: null,
    model: null,
    inputTokens: null,
    outputTokens: null,
    costMicros: null,
    ...overrides,
  };
}

export function anomalyEntry(
  accountId: string,
  tokenId: string,
  overrides: Partial<AnomalyEntry> = {},
): AnomalyEntry {
  return {
    id: requestId(),
    accountId,
    tokenId,
    timestamp: T0,
    origin: 'https://evil.example',
    ip: '198.51.100.9',
    country: null,
    path: '/openai/v1/models',
    reason: 'origin_not_allowed',
    kind: 'breach',
    details: null,
    ...overrides,
  };
}

/** Walks every page of a store list, checking that pages neither overlap nor stop early. */
export async function allPages<T>(
  list: (page: PageQuery) => Promise<Page<T>>,
  limit: number,
  position: (item: T) => PageAfter,
): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let after: PageQuery['after'];
  for (let pages = 1; pages < 1000; pages++) {
    const page = await list({ limit, after });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    items.push(...page.items);
    const last = page.items.at(-1);
    if (!page.hasMore || last === undefined) return { items, pages };
    after = position(last);
  }
  throw new Error('pagination did not end');
}

/**
 * A Kysely that compiles queries as the store does on `dialect`. Compiling needs no connection:
 * neither dialect connects before the first query runs. Destroy it when done (the pg pool).
 */
export function compilingDb(dialect: 'sqlite' | 'postgres'): Kysely<Database> {
  return dialect === 'sqlite'
    ? new Kysely<Database>({
        dialect: new SqliteDialect({ database: () => Promise.reject(new Error('not used')) }),
      })
    : new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ max: 1 }) }) });
}

/** Whether the SQLite database files (main file and WAL) hold `bytes` anywhere. */
export async function sqliteFilesContain(opened: OpenedDatabase, bytes: Buffer): Promise<boolean> {
  for (const name of ['tokenproxy.db', 'tokenproxy.db-wal']) {
    const content = await readFile(path.join(opened.dataDir, name)).catch(() => Buffer.alloc(0));
    if (content.includes(bytes)) return true;
  }
  return false;
}
