/* eslint-disable @typescript-eslint/no-non-null-assertion --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../events/support.js';
import { runCli, startServe, type ServerProcess } from '../support/cli.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { until } from '../support/poll.js';
import { SLOW_POLL, alive, socketOwners, startRedis, type TestRedis } from './workers-support.js';

/**
 * One outbox, several delivering processes: three `serve` processes on one PostgreSQL database, and
 * `serve --workers 3` on one SQLite data dir (three worker processes on one file). Every event is
 * delivered once in normal operation; the holder of a delivery killed with -9 mid-attempt leaves it
 * to another process once its lease runs out, with the same webhook-id.
 */

const EVENTS = 24;
const FLAGS = ['--insecure-http', '--allow-private-webhooks', '--webhook-retry-schedule', '1s,1s,1s'];

interface Cluster {
  readonly servers: ServerProcess[];
  /** Every management API, in turn. */
  readonly apiUrls: string[];
  /** `event delivered` log lines: the event and the pid (or server index) that delivered it. */
  delivered(): { event: string; by: string }[];
  readonly pids: () => number[];
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`one delivery per event across processes (${fixture.name})`, () => {
    let db: OpenedDatabase;
    let redis: TestRedis;
    let receiver: Receiver;
    let cluster: Cluster;
    const dirs: string[] = [];
    let apiKey = '';
    const dispatcher = new Agent({ headersTimeout: 60_000, bodyTimeout: 60_000 });
    let next = 0;

    const api = async (method: string, url: string, body?: unknown) => {
      const base = cluster.apiUrls[next++ % cluster.apiUrls.length]!;
      const res = await request(`${base}${url}`, {
        dispatcher,
        method: method as 'GET',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    };
    const revokeOne = async (): Promise<string> => {
      const token = await api('POST', '/v1/tokens', {
        name: `t${next}`,
        provider: 'openai',
        allowed_hosts: ['app.example.com'],
        real_key: `sk-cluster-${randomBytes(8).toString('hex')}-key`,
      });
      expect(token.status).toBe(201);
      const id = String(token.body.token_id);
      expect((await api('DELETE', `/v1/tokens/${id}`)).status).toBe(200);
      return id;
    };

    beforeAll(async () => {
      db = await fixture.create();
      redis = await startRedis();
      receiver = await startReceiver();
      const env = { TOKENPROXY_MASTER_KEY: randomBytes(32).toString('base64'), TOKENPROXY_REDIS: redis.url };
      const servers: ServerProcess[] = [];
      if (fixture.name === 'postgres') {
        for (let i = 0; i < 3; i++) {
          const dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-outbox-'));
          dirs.push(dir);
          servers.push(await startServe(['--data-dir', dir, '--database', db.database!, ...FLAGS], env));
        }
      } else {
        servers.push(await startServe(['--data-dir', db.dataDir, '--workers', '3', ...FLAGS], env));
      }
      const logs = () =>
        servers.flatMap((s, i) =>
          s
            .stdout()
            .split('\n')
            .filter((l) => l.includes('"msg":"event delivered"'))
            .map((l) => JSON.parse(l) as { event_id: string; pid?: number })
            .map((l) => ({ event: l.event_id, by: String(l.pid ?? `server${i}`) })),
        );
      cluster = {
        servers,
        apiUrls: servers.map((s) => s.apiUrl),
        delivered: logs,
        pids: () =>
          fixture.name === 'postgres'
            ? servers.map((s) => s.child.pid!)
            : [...servers[0]!.stdout().matchAll(/"pid":(\d+),"msg":"worker ready"/g)].map((m) =>
                Number(m[1]),
              ),
      };
      // An account without the free plan's token cap, made while the processes run.
      const created = await runCli(
        [
          'accounts',
          'create',
          '--name',
          'cluster',
          '--plan',
          'unlimited',
          '--json',
          '--data-dir',
          db.dataDir,
          ...(db.database === undefined ? [] : ['--database', db.database]),
        ],
        env,
      );
      expect(created.code).toBe(0);
      apiKey = (JSON.parse(created.stdout) as { api_key: string }).api_key;
      const hook = await api('POST', '/v1/webhooks', { url: receiver.url, events: ['token.revoked'] });
      expect(hook.status).toBe(201);
    }, 240_000);

    afterAll(async () => {
      for (const s of cluster?.servers ?? []) if (s.child.exitCode === null) await s.stop();
      for (const pid of cluster?.pids() ?? []) if (alive(pid)) process.kill(pid, 'SIGKILL');
      await dispatcher.close();
      await receiver?.close();
      await redis?.stop();
      await db?.cleanup();
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    });

    it(
      `${EVENTS} events made on every process: each delivered exactly once`,
      { timeout: 180_000 },
      async () => {
        const ids = new Set<string>();
        await Promise.all(
          Array.from({ length: 4 }, async () => {
            for (let i = 0; i < EVENTS / 4; i++) ids.add(await revokeOne());
          }),
        );
        await receiver.waitFor(EVENTS, 60_000);
        // Time for a duplicate to show up, were there one: longer than a poll of every process.
        await new Promise((r) => setTimeout(r, 3000));
        const webhookIds = receiver.requests.map((r) => String(r.headers['webhook-id']));
        expect(webhookIds).toHaveLength(EVENTS);
        expect(new Set(webhookIds).size).toBe(EVENTS);
        const tokens = receiver.requests.map(
          (r) => (JSON.parse(r.body) as { data: { token_id: string } }).data.token_id,
        );
        expect(new Set(tokens)).toEqual(ids);
        const delivered = await until(
          'every delivery to be logged',
          () => {
            const d = cluster.delivered();
            return d.length >= EVENTS ? d : undefined;
          },
          SLOW_POLL,
        );
        expect(delivered).toHaveLength(EVENTS);
        // Any process delivers: more than one did.
        expect(new Set(delivered.map((d) => d.by)).size).toBeGreaterThan(1);
      },
    );

    it(
      'the holder killed with -9 mid-delivery: another process delivers it, same webhook-id',
      { timeout: 180_000 },
      async () => {
        const before = receiver.requests.length;
        receiver.script(['hang'], 200);
        await revokeOne();
        const [attempt] = (await receiver.waitFor(before + 1, 60_000)).slice(before);
        // The process at the other end of the hanging connection holds the delivery's lease.
        const holders = (await socketOwners(receiver.port, 'client')).filter((pid) => pid !== process.pid);
        expect(holders).toHaveLength(1);
        const holder = holders[0]!;
        expect(cluster.pids()).toContain(holder);
        process.kill(holder, 'SIGKILL');
        await until('the holder to exit', () => !alive(holder), SLOW_POLL);

        // After the lease (twice the 15 s delivery timeout) another process takes it over.
        const all = await receiver.waitFor(before + 2, 90_000);
        const retry = all[before + 1]!;
        expect(retry.headers['webhook-id']).toBe(attempt!.headers['webhook-id']);
        expect(retry.body).toBe(attempt!.body);
        const event = (JSON.parse(retry.body) as { id: string }).id;
        const by = await until(
          'the redelivery to be logged',
          () => cluster.delivered().find((d) => d.event === event),
          SLOW_POLL,
        );
        expect(by.by).not.toBe(String(holder));
        await new Promise((r) => setTimeout(r, 3000));
        expect(receiver.requests).toHaveLength(before + 2);
      },
    );
  });
}
