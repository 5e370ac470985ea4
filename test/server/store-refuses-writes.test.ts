import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, type DatabaseFixture } from '../support/databases.js';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { storeDb } from '../support/store-internals.js';

/**
 * A store that answers reads but refuses every write for a while: SQLite's disk full (simulated with
 * `PRAGMA max_page_count`, which makes SQLite answer SQLITE_FULL exactly as ENOSPC does) and a
 * read-only PostgreSQL database. Users get a 503 saying which and what to do, nothing acknowledged
 * is lost, /readyz names it, and everything comes back by itself once the operator fixes the store.
 */

interface Refusal {
  readonly words: RegExp;
  readonly degraded: string;
  start(api: ApiHarness): Promise<void>;
  end(api: ApiHarness): Promise<void>;
}

function pageLimit(limit: number | 'none'): (api: ApiHarness) => Promise<void> {
  return async (api) => {
    const db = storeDb(api.store);
    const pages =
      limit === 'none'
        ? 1_073_741_823
        : ((await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows[0]?.page_count ?? 0) +
          limit;
    await sql.raw(`pragma max_page_count = ${pages}`).execute(db);
  };
}

async function admin(api: ApiHarness, statements: readonly string[]): Promise<void> {
  const url = new URL(api.db.database ?? '');
  const name = url.pathname.slice(1);
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement.replaceAll('$db', name));
  } finally {
    await client.end();
  }
}

/** Sessions read default_transaction_read_only when they start: end the pool's, it opens new ones. */
const TERMINATE =
  "select pg_terminate_backend(pid) from pg_stat_activity where datname = '$db' and pid <> pg_backend_pid()";

const REFUSALS: Record<DatabaseFixture['name'], Refusal> = {
  sqlite: {
    words: /disk is full/,
    degraded: 'store_full',
    start: pageLimit(0),
    end: pageLimit('none'),
  },
  postgres: {
    words: /read-only/,
    degraded: 'store_read_only',
    start: (api) => admin(api, ['alter database "$db" set default_transaction_read_only = on', TERMINATE]),
    end: (api) => admin(api, ['alter database "$db" reset default_transaction_read_only', TERMINATE]),
  },
};

const KEY = { provider: 'openai', real_key: 'sk-refused-writes-test-0123456789' };

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`a ${fixture.name} store that refuses writes`, () => {
    const refusal = REFUSALS[fixture.name];
    let api: ApiHarness;

    beforeAll(async () => {
      api = await startApiHarness(fixture);
    });
    afterAll(async () => {
      await api?.close();
    });

    it('answers 503 store_unavailable saying why, loses nothing acknowledged, and recovers by itself', async () => {
      await refusal.start(api);
      // Writes that still fit in free pages (or a pooled session from before) may succeed: whatever
      // was acknowledged must stay. Then every write is refused with the same clear answer.
      const acknowledged: string[] = [];
      let refused: { status: number; body: { error: Record<string, string> } } | undefined;
      for (let i = 0; i < 400 && refused === undefined; i += 1) {
        const res = await api.request('POST', '/v1/keys', { body: { name: `key ${i}`, ...KEY } });
        if (res.status === 201) acknowledged.push((res.body as { key_id: string }).key_id);
        else refused = res;
      }
      expect(refused?.status).toBe(503);
      expect(refused?.body.error).toMatchObject({ type: 'internal', code: 'store_unavailable' });
      expect(refused?.body.error.message).toMatch(refusal.words);
      expect(refused?.body.error.message).toContain('nothing was changed');
      expect(refused?.body.error.message).toContain('/readyz');

      const again = await api.request('POST', '/v1/tokens', {
        body: { name: 't', allowed_hosts: ['app.example.com'], ...KEY },
      });
      expect(again.status).toBe(503);
      expect((again.body as { error: { message: string } }).error.message).toMatch(refusal.words);

      // Reading still works, and shows exactly what was acknowledged.
      const listed = await api.request('GET', '/v1/keys?limit=100');
      expect(listed.status).toBe(200);
      expect((listed.body as { data: { key_id: string }[] }).data.map((k) => k.key_id).sort()).toEqual(
        [...acknowledged].sort(),
      );

      const ready = await api.request('GET', '/readyz', { apiKey: null });
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'degraded', degraded: [refusal.degraded] });

      // The operator's log says what happened in the database's own words, not a failed ROLLBACK.
      const logged = api.logs.filter((line) => line.includes('"request failed"')).join('\n');
      expect(logged).toContain('refuses writes');
      expect(logged).not.toContain('cannot rollback');

      await refusal.end(api);
      let created: { status: number } | undefined;
      for (let i = 0; i < 20 && created?.status !== 201; i += 1) {
        created = await api.request('POST', '/v1/keys', { body: { name: 'after', ...KEY } });
      }
      expect(created?.status).toBe(201);
      expect((await api.request('GET', '/readyz', { apiKey: null })).body).toEqual({ status: 'ready' });
      if (fixture.name === 'sqlite') {
        const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(
          storeDb(api.store),
        );
        expect(check.rows).toEqual([{ integrity_check: 'ok' }]);
      }
    });
  });
}
