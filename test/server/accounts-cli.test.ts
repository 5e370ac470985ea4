/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refuseAuditEntries } from '../support/audit-refusal.js';
import { runCli, startServe, type ServerProcess } from '../support/cli.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { until } from '../support/poll.js';

const API_KEY_RE = /svc_sk_[1-9A-HJ-NP-Za-km-z]{43}/;
const REAL_KEY = `sk-cli-${Date.now()}-DISTINCT-real-key`;
const PLANS = {
  team: { active_tokens: 50, requests_per_month: 2_000_000 },
  // One token and two requests a month: a plan change is visible on the next request.
  tiny: { active_tokens: 1, requests_per_month: 2 },
};

/** Plan changes reach the proxy within about a second; each probe is a proxied request. */
const PLAN_POLL = { timeoutMs: 10_000, everyMs: 100 };

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`tokenproxy accounts … while the server runs (${fixture.name})`, () => {
    let db: OpenedDatabase;
    let mock: MockProvider;
    let work: string;
    let server: ServerProcess;
    let dispatcher: Agent;
    let storeArgs: string[];

    const cli = (args: string[]) => runCli(['accounts', ...args, ...storeArgs]);
    const api = async (apiKey: string, method: string, url: string, body?: unknown) => {
      const res = await request(`${server.apiUrl}${url}`, {
        method: method as 'GET',
        dispatcher,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.body.text();
      return { status: res.statusCode, text, body: JSON.parse(text) as Record<string, any> };
    };
    const proxied = async (token: string) => {
      const res = await request(`${server.proxyUrl}/openai/v1/models`, {
        dispatcher,
        headers: { authorization: `Bearer ${token}`, origin: 'https://app.example.com' },
      });
      const text = await res.body.text();
      return { status: res.statusCode, text };
    };
    const newToken = (apiKey: string, name: string) =>
      api(apiKey, 'POST', '/v1/tokens', {
        name,
        provider: 'openai',
        real_key: REAL_KEY,
        allowed_hosts: ['app.example.com'],
      });

    beforeAll(async () => {
      db = await fixture.create();
      mock = await startMockProvider();
      work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-accounts-cli-'));
      await writeFile(path.join(work, 'ca.pem'), mock.caCertPem);
      await writeFile(
        path.join(work, 'config.json'),
        JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } }, plans: PLANS }),
      );
      storeArgs = [
        '--data-dir',
        db.dataDir,
        '--config',
        path.join(work, 'config.json'),
        ...(db.database === undefined ? [] : ['--database', db.database]),
      ];
      server = await startServe([...storeArgs, '--provider-ca', path.join(work, 'ca.pem')]);
      dispatcher = new Agent({
        connect: { ca: await readFile(path.join(db.dataDir, 'tls', 'cert.pem'), 'utf8') },
      });
    }, 120_000);

    afterAll(async () => {
      await server?.stop();
      await dispatcher?.close();
      await mock?.close();
      await db?.cleanup();
      if (work) await rm(work, { recursive: true, force: true });
    });

    it('create --plan team makes an account on a plan of the config file; an unknown plan exits 2', async () => {
      const res = await cli(['create', '--name', 'acme', '--plan', 'team', '--json']);
      expect(res.code, res.stderr).toBe(0);
      const created = JSON.parse(res.stdout) as { account_id: string; api_key: string };
      const account = await api(created.api_key, 'GET', '/v1/account');
      expect(account.body).toMatchObject({
        name: 'acme',
        plan: 'team',
        limits: { active_tokens: 50, requests_per_month: 2_000_000 },
      });
      // The store already had the server's first account: no note about a new store.
      expect(res.stderr).not.toContain('first account of this store');
      const bad = await cli(['create', '--name', 'x', '--plan', 'gold']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('unknown plan "gold". Plans in force: free, unlimited, team, tiny');
      // A name the dashboard's "type the account name" confirmation could not take.
      const multiline = await cli(['create', '--name', 'ops\nteam']);
      expect(multiline.code).toBe(2);
      expect(multiline.stderr).toContain('--name must be visible text');
    });

    it('list prints a table and --json, never a key', async () => {
      const created = JSON.parse((await cli(['create', '--name', 'lister', '--json'])).stdout) as {
        account_id: string;
        api_key: string;
      };
      const table = await cli(['list']);
      expect(table.code, table.stderr).toBe(0);
      const lines = table.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^ID\s+NAME\s+PLAN\s+TOKENS\s+REQUESTS\s+API KEYS\s+CREATED$/);
      const row = lines.find((l) => l.startsWith(created.account_id)) ?? '';
      expect(row).toMatch(
        new RegExp(`^${created.account_id}\\s+lister\\s+free\\s+0/3\\s+0/100000\\s+1\\s+\\d{4}-`),
      );
      expect(lines.some((l) => /\sdefault\s+free\s/.test(l))).toBe(true);
      const json = await cli(['list', '--json']);
      const rows = JSON.parse(json.stdout) as Record<string, any>[];
      expect(rows.find((r) => r.account_id === created.account_id)).toMatchObject({
        name: 'lister',
        plan: 'free',
        limits: { active_tokens: 3, requests_per_month: 100_000 },
        usage: { requests: 0, active_tokens: 0 },
        api_keys: [{ name: 'default', scope: 'full', start: created.api_key.slice(0, 11) }],
      });
      expect(table.stdout + json.stdout).not.toMatch(API_KEY_RE);
    });

    it('set-plan changes the limits at once in the running server: token cap and monthly quota', async () => {
      const created = JSON.parse(
        (await cli(['create', '--name', 'mover', '--plan', 'team', '--json'])).stdout,
      ) as {
        account_id: string;
        api_key: string;
      };
      const key = created.api_key;
      const first = await newToken(key, 'one');
      expect(first.status, first.text).toBe(201);
      const token = String(first.body.sanitized_key);
      for (let i = 0; i < 3; i++) expect((await proxied(token)).status).toBe(200);

      const moved = await cli(['set-plan', 'mover', 'tiny']);
      expect(moved.code, moved.stderr).toBe(0);
      expect(moved.stdout).toContain('is now on plan tiny (was team): active tokens 1, requests per month 2');
      // The API reads the plan on every request: the token cap applies to the very next one.
      const refused = await newToken(key, 'two');
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body.error.code).toBe('plan_limit_exceeded');
      expect((await api(key, 'GET', '/v1/account')).body).toMatchObject({ plan: 'tiny' });
      // The proxy re-reads plans every second: 3 requests used, 2 allowed, so it refuses.
      await until(
        'the proxy to refuse on the tiny plan',
        async () => (await proxied(token)).status === 429,
        PLAN_POLL,
      );
      const quota = await proxied(token);
      expect(quota.status).toBe(429);
      expect(quota.text).toContain('quota_exceeded');

      expect((await cli(['set-plan', created.account_id, 'team'])).code).toBe(0);
      await until(
        'the proxy to forward on the team plan again',
        async () => (await proxied(token)).status === 200,
        PLAN_POLL,
      );
      expect((await newToken(key, 'two')).status).toBe(201);

      const unknown = await cli(['set-plan', 'mover', 'gold']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('unknown plan "gold"');
      const nobody = await cli(['set-plan', 'nobody-by-this-name', 'team']);
      expect(nobody.code).toBe(2);
      expect(nobody.stderr).toContain('no account with id or name "nobody-by-this-name"');
      // The API refuses to change a plan and names the command that does.
      const patch = await api(key, 'PATCH', '/v1/account', { plan: 'unlimited' });
      expect(patch.status).toBe(403);
      expect(patch.body.error.message).toContain('tokenproxy accounts set-plan');
    });

    it('rotate-key prints the new key once; the old key is refused (401) on its next request', async () => {
      const created = JSON.parse((await cli(['create', '--name', 'rotor', '--json'])).stdout) as {
        account_id: string;
        api_key: string;
      };
      const old = created.api_key;
      expect((await api(old, 'GET', '/v1/account')).status).toBe(200);
      const rotated = await cli(['rotate-key', 'rotor']);
      expect(rotated.code, rotated.stderr).toBe(0);
      const fresh = API_KEY_RE.exec(rotated.stdout)?.[0] ?? '';
      expect(fresh).not.toBe(old);
      expect(rotated.stdout.match(new RegExp(API_KEY_RE.source, 'g'))).toHaveLength(1);
      expect(rotated.stdout).toContain('the old key no longer works');
      const refused = await api(old, 'GET', '/v1/account');
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('invalid_api_key');
      const account = await api(fresh, 'GET', '/v1/account');
      expect(account.body).toMatchObject({ account_id: created.account_id, name: 'rotor' });
      const keys = await api(fresh, 'GET', '/v1/api_keys');
      expect(keys.body.data).toEqual([expect.objectContaining({ name: 'default', scope: 'full' })]);
      // The CLI's changes are in the account's audit log as "cli", with no address and no key.
      const audit = await api(fresh, 'GET', '/v1/audit');
      expect(
        audit.body.data.map((e: Record<string, any>) => [e.action, e.actor.type, e.actor.name, e.ip]),
      ).toEqual([
        ['account.key_rotated', 'cli', 'cli', null],
        ['account.created', 'cli', 'cli', null],
      ]);
      expect(audit.body.data[0].object_id).toBe(keys.body.data[0].id);
      expect(audit.text).not.toMatch(API_KEY_RE);
    });

    it('set-plan is in the audit log and becomes an account.plan_changed event', async () => {
      const created = JSON.parse((await cli(['create', '--name', 'audited', '--json'])).stdout) as {
        account_id: string;
        api_key: string;
      };
      expect((await cli(['set-plan', created.account_id, 'unlimited'])).code).toBe(0);
      const audit = await api(created.api_key, 'GET', '/v1/audit?action=account.plan_changed');
      expect(audit.body.data).toEqual([
        expect.objectContaining({
          object_id: created.account_id,
          actor: { type: 'cli', id: null, name: 'cli' },
        }),
      ]);
      const events = await api(created.api_key, 'GET', '/v1/events?type=account.plan_changed');
      expect(events.body.data[0].data).toMatchObject({ plan: 'unlimited', previous_plan: 'free' });
    });

    it('a change whose audit entry cannot be written is not made: create, set-plan and rotate-key fail whole', async () => {
      const created = JSON.parse((await cli(['create', '--name', 'atomic', '--json'])).stdout) as {
        account_id: string;
        api_key: string;
      };
      const accept = await refuseAuditEntries(db.store);
      try {
        for (const args of [
          ['create', '--name', 'never-made'],
          ['set-plan', 'atomic', 'unlimited'],
          ['rotate-key', 'atomic'],
        ]) {
          const res = await cli(args);
          expect(res.code, `${args.join(' ')}: ${res.stdout}`).not.toBe(0);
          // No key is printed for a change that did not happen.
          expect(res.stdout, args.join(' ')).not.toMatch(API_KEY_RE);
        }
      } finally {
        await accept();
      }
      const listed = JSON.parse((await cli(['list', '--json'])).stdout) as { name: string; plan: string }[];
      expect(listed.map((a) => a.name)).not.toContain('never-made');
      expect(listed.find((a) => a.name === 'atomic')?.plan).toBe('free');
      // The key rotate-key would have replaced still works.
      expect((await api(created.api_key, 'GET', '/v1/account')).status).toBe(200);
      const audit = await api(created.api_key, 'GET', '/v1/audit');
      expect(audit.body.data.map((e: Record<string, any>) => e.action)).toEqual(['account.created']);
    });
  });
}

describe('plans in the config file are checked at start', () => {
  it.each([
    [{ team: { active_tokens: 5 } }, /plan "team" must give both "active_tokens" and "requests_per_month"/],
    [{ 'Team Plan': { active_tokens: 5, requests_per_month: 5 } }, /invalid plan name "Team Plan"/],
    [{ team: { active_tokens: -1, requests_per_month: 5 } }, /plan "team" field "active_tokens"/],
    [{ team: { active_tokens: 1, requests_per_month: 5, seats: 2 } }, /plan "team" unknown field "seats"/],
  ])('serve refuses %j with exit code 2 and a message naming the problem', async (plans, message) => {
    const work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-plans-'));
    try {
      await writeFile(path.join(work, 'config.json'), JSON.stringify({ plans }));
      const res = await runCli(['serve', '--config', path.join(work, 'config.json'), '--data-dir', work]);
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(message);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});

describe('tokenproxy accounts create on a data dir no server has used', () => {
  it("says it is the store's first account, and where that store is, so a mistyped --data-dir shows", async () => {
    const work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-accounts-new-'));
    try {
      const dataDir = path.join(work, 'typo');
      const first = await runCli(['accounts', 'create', '--name', 'a', '--json', '--data-dir', dataDir]);
      expect(first.code, first.stderr).toBe(0);
      // stdout stays the JSON alone; the note goes to stderr.
      expect(JSON.parse(first.stdout)).toHaveProperty('api_key');
      expect(first.stderr).toContain(`first account of this store (SQLite in ${dataDir})`);
      const second = await runCli(['accounts', 'create', '--name', 'b', '--data-dir', dataDir]);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).not.toContain('first account');
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});
