import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, type ServerProcess } from '../support/cli.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { startRedis, type TestRedis } from './support.js';

const postgres = databases.find((d) => d.name === 'postgres');

/**
 * DESIGN §9: processes starting at the same time on an empty store create one `default` account
 * between them, `--workers` primaries included (they created it without the bootstrap lock). The
 * accounts table is held for a few seconds, so both primaries reach the creation while it is held:
 * the window in which two unlocked count-then-insert steps both saw no account.
 */
describe.skipIf(!postgres?.available)('two `serve --workers 2` starting at once on an empty database', () => {
  let db: OpenedDatabase | undefined;
  let redis: TestRedis | undefined;
  let work = '';
  const servers: ServerProcess[] = [];

  afterAll(async () => {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await redis?.stop();
    await db?.cleanup();
    if (work !== '') await rm(work, { recursive: true, force: true });
  });

  it('create one default account between them, and one printed key', async () => {
    db = await (postgres as NonNullable<typeof postgres>).create();
    redis = await startRedis();
    work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-workers-bootstrap-'));
    const database = db.database as string;
    const holder = new pg.Client({ connectionString: database });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE');
    const env = { TOKENPROXY_MASTER_KEY: randomBytes(32).toString('base64') };
    const starts = [0, 1].map((i) =>
      startServe(
        [
          ...['--workers', '2', '--redis', (redis as TestRedis).url, '--database', database],
          ...['--data-dir', path.join(work, `member-${i}`), '--insecure-http'],
        ],
        env,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    await holder.query('COMMIT');
    await holder.end();
    servers.push(...(await Promise.all(starts)));
    expect(await db.store.accounts.count()).toBe(1);
    const printed = servers.flatMap((s) => s.stderr().match(/svc_sk_\w+/g) ?? []);
    expect(printed).toHaveLength(1);
  }, 120_000);
});
