import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';

/**
 * An operator sets `statement_timeout` on the database (a common safety setting), and a change waits
 * on a lock past it; or an administrator cancels the statement. The client gets a 503 saying the
 * database cancelled it, that nothing was changed and what helps, not a 500 "internal error"; nothing
 * of the change is left; /readyz does not call the store degraded (a cancellation is not a state);
 * and the next try passes once the lock is gone.
 */
const postgres = databases.find((fixture) => fixture.name === 'postgres');

const KEY = { provider: 'openai', real_key: 'sk-cancelled-statement-test-0123456789' };

describe.skipIf(!postgres?.available)('a PostgreSQL store that cancels statements', () => {
  let api: ApiHarness;
  let holder: pg.Client | undefined;

  beforeAll(async () => {
    if (postgres === undefined) throw new Error('the PostgreSQL fixture is missing');
    api = await startApiHarness(postgres);
  });
  afterAll(async () => {
    await holder?.end();
    await api?.close();
  });

  function adminUrl(database = 'postgres'): { url: string; name: string } {
    const url = new URL(api.db.database ?? '');
    const name = url.pathname.slice(1);
    url.pathname = `/${database}`;
    return { url: url.toString(), name };
  }

  async function admin(statements: readonly string[]): Promise<void> {
    const { url, name } = adminUrl();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      for (const statement of statements) await client.query(statement.replaceAll('$db', name));
    } finally {
      await client.end();
    }
  }

  /** Sessions read the database's settings when they start: end the pool's, it opens new ones. */
  const TERMINATE =
    "select pg_terminate_backend(pid) from pg_stat_activity where datname = '$db' and pid <> pg_backend_pid()";

  /** Holds the audit log's table, so a change waits at its audit entry, after its own row is written. */
  async function holdAuditLog(): Promise<() => Promise<void>> {
    const client = new pg.Client({ connectionString: api.db.database });
    holder = client;
    await client.connect();
    await client.query('begin');
    await client.query('lock table audit_log in access exclusive mode');
    return async () => {
      await client.query('rollback');
      await client.end();
      holder = undefined;
    };
  }

  async function keyIds(): Promise<string[]> {
    const listed = await api.request('GET', '/v1/keys?limit=100');
    expect(listed.status).toBe(200);
    return (listed.body as { data: { key_id: string }[] }).data.map((k) => k.key_id);
  }

  function expectCancelled(res: { status: number; body: { error: Record<string, string> } }): void {
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.body.error).toMatchObject({ type: 'internal', code: 'store_unavailable' });
    const { message } = res.body.error;
    expect(message).toContain('The database cancelled');
    expect(message).toContain('nothing was changed');
    expect(message).toContain('statement_timeout');
    expect(message).toContain('or an administrator cancelled it');
  }

  it('statement_timeout: 503 store_unavailable saying so, nothing changed, /readyz ready, a retry passes', async () => {
    const before = await keyIds();
    await admin(['alter database "$db" set statement_timeout = 300', TERMINATE]);
    try {
      const release = await holdAuditLog();
      let res;
      try {
        res = await api.request('POST', '/v1/keys', { body: { name: 'timed out', ...KEY } });
      } finally {
        await release();
      }
      expectCancelled(res);
      // The key's row was written before the audit entry waited: the rollback took it away.
      expect(await keyIds()).toEqual(before);
      expect((await api.request('GET', '/readyz', { apiKey: null })).body).toEqual({ status: 'ready' });
      // The operator's log has the database's own words.
      const logged = api.logs.filter((line) => line.includes('"request failed"')).join('\n');
      expect(logged).toContain('canceling statement due to statement timeout');

      const again = await api.request('POST', '/v1/keys', { body: { name: 'after', ...KEY } });
      expect(again.status).toBe(201);
    } finally {
      await admin(['alter database "$db" reset statement_timeout', TERMINATE]);
    }
  });

  it('an administrator’s pg_cancel_backend: the same 503, true of it too', async () => {
    const before = await keyIds();
    const release = await holdAuditLog();
    let res;
    try {
      const pending = api.request('POST', '/v1/keys', { body: { name: 'cancelled', ...KEY } });
      let cancelled = false;
      for (let i = 0; i < 200 && !cancelled; i += 1) {
        const { url, name } = adminUrl();
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          const { rows } = await client.query<{ done: boolean }>(
            "select pg_cancel_backend(pid) as done from pg_stat_activity where datname = $1 and wait_event_type = 'Lock' and pid <> pg_backend_pid()",
            [name],
          );
          cancelled = rows.some((row) => row.done);
        } finally {
          await client.end();
        }
        if (!cancelled) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(cancelled).toBe(true);
      res = await pending;
    } finally {
      await release();
    }
    expectCancelled(res);
    expect(await keyIds()).toEqual(before);
  });
});
