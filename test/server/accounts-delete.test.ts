/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_TABLES } from '../../src/store/kysely/account-deletion.js';
import { runCli, startServe, type ServerProcess } from '../support/cli.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { until } from '../support/poll.js';
import { storeDb } from '../support/store-internals.js';

const API_KEY_RE = /svc_sk_[1-9A-HJ-NP-Za-km-z]{43}/;
const TOKEN_RE = /svc_hb_[1-9A-HJ-NP-Za-km-z]{20,}/;
const REAL_KEY = `sk-delete-${Date.now()}-DISTINCT-real-key`;

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(
    `tokenproxy accounts delete while the server runs (${fixture.name})`,
    () => {
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
      /** An account made by the CLI, with a token that has been used once and whose log record is stored. */
      const customer = async (name: string) => {
        const created = JSON.parse((await cli(['create', '--name', name, '--json'])).stdout) as {
          account_id: string;
          api_key: string;
        };
        const token = await api(created.api_key, 'POST', '/v1/tokens', {
          name: 'web',
          provider: 'openai',
          real_key: REAL_KEY,
          allowed_hosts: ['app.example.com'],
        });
        expect(token.status, token.text).toBe(201);
        const secret = String(token.body.sanitized_key);
        expect((await proxied(secret)).status).toBe(200);
        await until('the request-log record', async () => {
          const logs = await api(created.api_key, 'GET', '/v1/logs');
          return logs.body.data?.length === 1;
        });
        return { accountId: created.account_id, apiKey: created.api_key, token: secret };
      };
      /** The account's rows left in every table with an account_id (the account row included). */
      const rowsLeft = async (accountId: string) => {
        let left = 0;
        for (const table of [...ACCOUNT_TABLES, 'accounts']) {
          const column = table === 'accounts' ? 'id' : 'account_id';
          const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}
          where ${sql.ref(column)} = ${accountId}`.execute(storeDb(db.store));
          left += Number(rows[0]?.n);
        }
        return left;
      };

      beforeAll(async () => {
        db = await fixture.create();
        mock = await startMockProvider();
        work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-accounts-delete-'));
        await writeFile(path.join(work, 'ca.pem'), mock.caCertPem);
        await writeFile(
          path.join(work, 'config.json'),
          JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } } }),
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

      it('refuses without --confirm, naming what it would delete; a wrong name deletes nothing either', async () => {
        const leaver = await customer('hesitant');
        const refused = await cli(['delete', 'hesitant']);
        expect(refused.code).toBe(2);
        expect(refused.stdout).toBe('');
        expect(refused.stderr).toContain('nothing was deleted');
        expect(refused.stderr).toContain(`account "hesitant" (${leaver.accountId}, plan free`);
        expect(refused.stderr).toMatch(/1 provider keys, 1 tokens, 1 API keys, .*1 request-log records/);
        expect(refused.stderr).toContain('--confirm hesitant');
        const wrong = await cli(['delete', leaver.accountId, '--confirm', 'someone-else']);
        expect(wrong.code).toBe(2);
        expect(wrong.stderr).toContain(
          `--confirm must be the name of account ${leaver.accountId}, "hesitant"`,
        );
        // Still there, still working.
        expect((await proxied(leaver.token)).status).toBe(200);
        expect((await api(leaver.apiKey, 'GET', '/v1/account')).status).toBe(200);
        const unknown = await cli(['delete', 'nobody-by-this-name', '--confirm', 'nobody-by-this-name']);
        expect(unknown.code).toBe(2);
        expect(unknown.stderr).toContain('no account with id or name "nobody-by-this-name"');
      });

      it('deletes everything of the account; its token and API key are refused within about a second', async () => {
        const leaver = await customer('leaver');
        const stayer = await customer('stayer');
        const res = await cli(['delete', 'leaver', '--confirm', 'leaver', '--json']);
        const done = Date.now();
        expect(res.code, res.stderr).toBe(0);
        const out = JSON.parse(res.stdout) as Record<string, any>;
        expect(out).toMatchObject({ account_id: leaver.accountId, name: 'leaver', plan: 'free' });
        expect(out.deleted).toMatchObject({ provider_keys: 1, tokens: 1, api_keys: 1, request_logs: 1 });
        expect(out.deleted.audit_log).toBeGreaterThanOrEqual(2);
        // No secret on the way out.
        for (const pattern of [API_KEY_RE, TOKEN_RE]) expect(res.stdout + res.stderr).not.toMatch(pattern);
        expect(res.stdout + res.stderr).not.toContain(REAL_KEY);

        // The API looks its key up on every request: refused at once.
        const key = await api(leaver.apiKey, 'GET', '/v1/account');
        expect(key.status).toBe(401);
        expect(key.body.error.code).toBe('invalid_api_key');
        // The proxy keeps a token for at most 1 s.
        const refused = await until(
          'the token to be refused',
          async () => {
            const r = await proxied(leaver.token);
            return r.status === 401 ? r : false;
          },
          { timeoutMs: 5000, everyMs: 50 },
        );
        expect(Date.now() - done).toBeLessThan(1500);
        expect(JSON.parse(refused.text).error.code).toBe('invalid_token');
        expect(await rowsLeft(leaver.accountId)).toBe(0);

        // Another account is untouched.
        expect((await proxied(stayer.token)).status).toBe(200);
        expect((await api(stayer.apiKey, 'GET', '/v1/account')).status).toBe(200);
        const listed = JSON.parse((await cli(['list', '--json'])).stdout) as { name: string }[];
        expect(listed.map((a) => a.name)).not.toContain('leaver');
        expect(listed.map((a) => a.name)).toContain('stayer');
      });

      it('run again with the id, removes what requests in flight wrote after the deletion', async () => {
        const late = await customer('late');
        expect((await cli(['delete', 'late', '--confirm', 'late'])).code).toBe(0);
        // A streaming response that ends after the deletion: its record lands under the deleted id.
        await db.store.requestLogs.insertMany([
          {
            id: `req_${Date.now()}late`,
            timestamp: new Date().toISOString(),
            accountId: late.accountId,
            tokenId: null,
            provider: 'openai',
            origin: null,
            ip: '203.0.113.9',
            country: null,
            pop: 'test',
            path: '/openai/v1/chat/completions',
            status: 200,
            authorized: true,
            latencyMs: 90_000,
            errorCode: null,
            model: null,
            inputTokens: null,
            outputTokens: null,
            costMicros: null,
          },
        ]);
        const refused = await cli(['delete', late.accountId]);
        expect(refused.code).toBe(2);
        expect(refused.stderr).toContain(
          `Account ${late.accountId} no longer exists, but rows written after`,
        );
        expect(refused.stderr).toContain('1 request-log records');
        const swept = await cli(['delete', late.accountId, '--confirm', late.accountId, '--json']);
        expect(swept.code, swept.stderr).toBe(0);
        expect(JSON.parse(swept.stdout)).toMatchObject({
          account_id: late.accountId,
          deleted: { request_logs: 1 },
        });
        expect(await rowsLeft(late.accountId)).toBe(0);
        // Nothing left: an unknown account again.
        const gone = await cli(['delete', late.accountId, '--confirm', late.accountId]);
        expect(gone.code).toBe(2);
        expect(gone.stderr).toContain(`no account with id or name "${late.accountId}"`);
      });
    },
  );
}

describe('deleting the last account of a store', () => {
  it('says so, and the next serve creates a new default account as on a new install', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-accounts-last-'));
    let server: ServerProcess | undefined;
    try {
      const created = await runCli(['accounts', 'create', '--name', 'only', '--data-dir', dataDir]);
      expect(created.code, created.stderr).toBe(0);
      const res = await runCli(['accounts', 'delete', 'only', '--confirm', 'only', '--data-dir', dataDir]);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toMatch(
        /^Deleted account "only" \(acct_\w+, plan free, created \d{4}-\d\d-\d\d\) at /,
      );
      expect(res.stdout).toContain('0 provider keys, 0 tokens, 1 API keys');
      expect(res.stderr).toContain('that was the last account of this store');
      server = await startServe(['--data-dir', dataDir, '--insecure-http']);
      expect(server.stderr()).toContain('Created account "default"');
    } finally {
      await server?.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
