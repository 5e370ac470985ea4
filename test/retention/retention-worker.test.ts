import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { startRetentionWorker, type RetentionWorker } from '../../src/retention/retention-worker.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { newAccount, rawQuery } from '../store/helpers.js';

/**
 * The retention worker starts a thread for each pass, and the thread ends with it: a server keeps
 * no idle V8 isolate (~20 MB) for a job that runs a few seconds an hour.
 */

const DAY = 86_400_000;
const POLICY = { logs: { ms: 30 * DAY, text: '30d' }, rollups: { ms: 400 * DAY, text: '400d' } };

/**
 * The worker threads this test file's process started, and those still running: from the process's
 * `worker` event, which Node emits for every new Worker on every supported version.
 */
const workers = { started: 0, live: 0 };
process.on('worker', (worker) => {
  workers.started++;
  workers.live++;
  worker.once('exit', () => workers.live--);
});

async function addOldRows(
  fixture: OpenedDatabase,
  dialect: 'sqlite' | 'postgres',
  accountId: string,
  rows: number,
) {
  await rawQuery(
    dialect,
    fixture,
    `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
     insert into request_logs (id, account_id, token_id, provider, timestamp, origin, ip, country, pop, path, status, authorized, latency_ms, error_code)
     select 'req_old' || i || '_' || ?, ?, null, 'openai', '2020-01-01T00:00:00.000Z', 'https://app.example',
            '203.0.113.7', null, 'test', '/openai/v1/models', 200, 1, 3, null
     from n`,
    [rows, String(Date.now()), accountId],
  );
}

async function countRows(fixture: OpenedDatabase, dialect: 'sqlite' | 'postgres'): Promise<number> {
  const [row] = await rawQuery(dialect, fixture, 'select count(*) as n from request_logs');
  return Number(row?.n);
}

for (const dialect of databases) {
  describe.skipIf(!dialect.available)(`retention worker on ${dialect.name}`, () => {
    let fixture: OpenedDatabase;
    let accountId: string;
    let worker: RetentionWorker | undefined;
    const lines: string[] = [];
    const logger = createLogger('debug', { write: (line: string) => void lines.push(line) });
    const start = (timing: { firstDelayMs?: number; intervalMs?: number } = { firstDelayMs: 3_600_000 }) => {
      worker = startRetentionWorker(
        { database: fixture.database, dataDir: fixture.dataDir, policy: POLICY },
        logger,
        timing,
      );
      return worker;
    };

    beforeEach(async () => {
      fixture = await dialect.create();
      accountId = (await newAccount(fixture.store)).account.id;
      lines.length = 0;
    });

    afterEach(async () => {
      await worker?.close();
      worker = undefined;
      await fixture.cleanup();
    });

    it('keeps no thread between passes; each pass runs on one that then ends', async () => {
      const before = { ...workers };
      expect(before.live).toBe(0);
      const retention = start();
      expect(workers).toEqual(before);
      await addOldRows(fixture, dialect.name, accountId, 500);
      expect((await retention.runNow())?.requestLogs).toBe(500);
      // The pass ran on a thread of its own, and settled only once that thread had ended.
      expect(workers).toEqual({ started: before.started + 1, live: 0 });
      // The next pass starts a thread of its own.
      await addOldRows(fixture, dialect.name, accountId, 300);
      expect((await retention.runNow())?.requestLogs).toBe(300);
      expect(workers).toEqual({ started: before.started + 2, live: 0 });
      expect(await countRows(fixture, dialect.name)).toBe(0);
    });

    it('runs passes on its schedule and logs what each deleted', async () => {
      await addOldRows(fixture, dialect.name, accountId, 200);
      start({ firstDelayMs: 50, intervalMs: 200 });
      await expect.poll(() => countRows(fixture, dialect.name), { timeout: 10_000 }).toBe(0);
      await expect
        .poll(() =>
          lines.some((l) => l.includes('retention: old history deleted') && l.includes('"request_logs":200')),
        )
        .toBe(true);
      // A later pass finds rows written since.
      await addOldRows(fixture, dialect.name, accountId, 100);
      await expect.poll(() => countRows(fixture, dialect.name), { timeout: 10_000 }).toBe(0);
    });

    it('close() stops a pass under way at its next batch, and ends its thread', async () => {
      // 2,000 rows per batch with a pause between: long enough to be stopped in the middle.
      await addOldRows(fixture, dialect.name, accountId, 60_000);
      const retention = start();
      const pass = retention.runNow();
      await expect.poll(() => countRows(fixture, dialect.name), { timeout: 20_000 }).toBeLessThan(60_000);
      await retention.close();
      const report = await pass;
      const left = await countRows(fixture, dialect.name);
      expect(left).toBeGreaterThan(0);
      expect(report?.requestLogs).toBe(60_000 - left);
      expect(workers.live).toBe(0);
      await expect(retention.runNow()).rejects.toThrow('retention stopped');
    });
  });
}

describe('retention worker against a database it cannot reach', () => {
  it('rejects the pass with the cause, and the schedule logs a failing streak once', async () => {
    const lines: string[] = [];
    const logger = createLogger('debug', { write: (line: string) => void lines.push(line) });
    const retention = startRetentionWorker(
      // Nothing listens on port 1 of loopback: the thread's connection is refused.
      { database: 'postgres://postgres@127.0.0.1:1/none', dataDir: '/nonexistent', policy: POLICY },
      logger,
      { firstDelayMs: 10, intervalMs: 100 },
    );
    const before = workers.started;
    try {
      await expect(retention.runNow()).rejects.toThrow(/127\.0\.0\.1:1|ECONNREFUSED|refused/);
      // Counted by the threads started (one per pass, one pass at a time): once a fourth has started,
      // the schedule's first two failed passes have ended and been reported. A fixed wait was too
      // short on a loaded CI machine, where starting a pass's thread alone can take half a second.
      await expect
        .poll(() => workers.started - before, { timeout: 20_000, interval: 20 })
        .toBeGreaterThanOrEqual(4);
      const failed = lines.filter((l) => l.includes('retention pass failed'));
      expect(failed).toHaveLength(1);
      // The log line names the error, never its message (which may quote a connection string).
      const line = JSON.parse(failed[0] ?? '{}') as { err?: { name?: unknown } };
      expect(typeof line.err?.name).toBe('string');
      expect(failed[0]).not.toContain('127.0.0.1');
    } finally {
      await retention.close();
    }
  });
});
