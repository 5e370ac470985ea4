import SqliteDatabase from 'better-sqlite3';
import type { Insertable } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { withStatementCache } from '../../src/store/dialects/sqlite-statements.js';
import { BatchInsert, ROWS_PER_STATEMENT } from '../../src/store/kysely/batch-insert.js';
import type { RequestLogsTable } from '../../src/store/schema.js';
import { compilingDb } from './helpers.js';

type Row = Insertable<RequestLogsTable>;

function row(i: number): Row {
  return {
    id: `req_${String(i).padStart(6, '0')}`,
    account_id: i % 3 === 0 ? null : `acc_${i}`,
    token_id: i % 2 === 0 ? null : `tok_${i}`,
    provider: 'openai',
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    origin: i % 5 === 0 ? null : 'https://app.example',
    ip: `10.0.0.${i % 256}`,
    country: null,
    pop: 'test',
    path: '/openai/v1/chat/completions',
    status: 200 + (i % 4),
    authorized: i % 2,
    latency_ms: i,
  };
}

const dialects = { sqlite: compilingDb('sqlite'), postgres: compilingDb('postgres') };

afterAll(async () => {
  await Promise.all(Object.values(dialects).map((db) => db.destroy()));
});

describe.each(Object.entries(dialects))('BatchInsert on %s', (_name, db) => {
  const compile = (rows: Row[]) =>
    db
      .insertInto('request_logs')
      .values(rows)
      .onConflict((oc) => oc.column('id').doNothing())
      .compile();
  const insert = new BatchInsert(compile, row(0));

  it.each([
    [1, [1]],
    [7, [4, 2, 1]],
    [8, [8]],
    [9, [8, 1]],
    [90, [64, 16, 8, 2]],
    [255, [128, 64, 32, 16, 8, 4, 2, 1]],
    [256, [256]],
    [600, [256, 256, 64, 16, 8]],
  ])('%i rows go out as statements of %j rows, each what Kysely itself compiles', (count, sizes) => {
    const rows = Array.from({ length: count }, (_, i) => row(i + 1));
    const statements = insert.statements(rows);
    let start = 0;
    expect(statements).toHaveLength(sizes.length);
    statements.forEach((statement, n) => {
      const size = sizes[n] as number;
      const expected = compile(rows.slice(start, start + size));
      expect(statement.sql).toBe(expected.sql);
      expect(statement.parameters).toEqual(expected.parameters);
      start += size;
    });
  });

  it('makes no statement for no rows', () => {
    expect(insert.statements([])).toEqual([]);
  });

  it('refuses a row that lacks a column instead of shifting the values after it', () => {
    const partial: Row = { ...row(1), country: undefined };
    expect(() => insert.statements([partial])).toThrow(/no value for country/);
  });

  it('refuses a sample with an undefined value, whose column Kysely would leave out', () => {
    expect(() => new BatchInsert(compile, { ...row(0), country: undefined })).toThrow(
      /sample row has no value for country/,
    );
  });

  it('uses statement sizes that stay under both databases’ bound-parameter limits', () => {
    expect(Math.max(...ROWS_PER_STATEMENT) * Object.keys(row(0)).length).toBeLessThan(32_766);
  });
});

describe('the SQLite statement cache', () => {
  it('prepares each text once, keeps only the most recently used, and never hands out a busy one', () => {
    const db = new SqliteDatabase(':memory:');
    let prepared = 0;
    const prepare = db.prepare.bind(db);
    db.prepare = (sql: string) => {
      prepared += 1;
      return prepare(sql);
    };
    const cached = withStatementCache(db, 2);
    cached.prepare('create table t (x integer)').run([]);
    const insert = cached.prepare('insert into t (x) values (?)');
    for (let i = 0; i < 5; i++) cached.prepare('insert into t (x) values (?)').run([i]);
    expect(cached.prepare('insert into t (x) values (?)')).toBe(insert);
    expect(prepared).toBe(2);

    const select = cached.prepare('select x from t order by x');
    const rows = select.iterate([]);
    expect(rows.next().value).toEqual({ x: 0 });
    // The same text while the first is still being read: a second statement, not the busy one.
    const again = cached.prepare('select x from t order by x');
    expect(again).not.toBe(select);
    expect(again.all([])).toHaveLength(5);
    rows.return?.();

    // Capacity 2: preparing select pushed out create, and preparing count now pushes out insert.
    cached.prepare('select count(*) as n from t');
    const before = prepared;
    cached.prepare('insert into t (x) values (?)');
    expect(prepared).toBe(before + 1);
    cached.close();
    expect(db.open).toBe(false);
  });
});
