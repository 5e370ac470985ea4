import type { Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dueForExpiry } from '../../src/store/kysely/tokens.js';
import type { Database } from '../../src/store/schema.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { at, compilingDb, createToken, newAccount, rawQuery } from './helpers.js';

/** The database's plan for a compiled query, one line per step. */
async function plan(
  dialect: 'sqlite' | 'postgres',
  opened: OpenedDatabase,
  query: { sql: string; parameters: readonly unknown[] },
): Promise<string[]> {
  if (dialect === 'sqlite') {
    const rows = await rawQuery('sqlite', opened, `EXPLAIN QUERY PLAN ${query.sql}`, query.parameters);
    return rows.map((row) => String(row.detail));
  }
  const client = new pg.Client({ connectionString: opened.database });
  await client.connect();
  try {
    // A test table is tiny, and a sequential scan is then cheapest whatever the indexes: forbid it,
    // so the plan shows whether an index can serve the query at all.
    await client.query('SET enable_seqscan = off');
    const result = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${query.sql}`, [
      ...query.parameters,
    ]);
    return result.rows.map((row) => row['QUERY PLAN']);
  } finally {
    await client.end();
  }
}

// Queries that run on a timer on every server must not grow with the number of tokens.
for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`query plans on ${fixture.name}`, () => {
    let opened: OpenedDatabase;
    let compiler: Kysely<Database>;

    beforeAll(async () => {
      compiler = compilingDb(fixture.name);
      opened = await fixture.create();
      const { account } = await newAccount(opened.store);
      for (let i = 0; i < 20; i++) {
        await createToken(opened.store, account.id, { token: { expiresAt: i % 2 === 0 ? null : at(i) } });
      }
    });

    afterAll(async () => {
      await compiler.destroy();
      await opened.cleanup();
    });

    it('the expiry sweep searches an index instead of scanning the tokens table', async () => {
      const query = dueForExpiry(compiler, at(3600), 100).compile();
      const steps = await plan(fixture.name, opened, query);
      const text = steps.join('\n');
      expect(text).toContain('tokens_status_expires_idx');
      if (fixture.name === 'sqlite') {
        expect(text).not.toMatch(/SCAN tokens|TEMP B-TREE/);
      } else {
        expect(text).not.toMatch(/Seq Scan|Sort/);
      }
    });
  });
}
