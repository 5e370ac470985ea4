import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Agent, buildConnector, request, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATION_NAMES } from '../../src/store/migrations/index.js';
import { KEY_FIELDS, TOKEN_FIELDS } from '../api/helpers.js';
import { startReceiver, type Receiver } from '../events/support.js';
import { runCli, startServe, type ServerProcess } from '../support/cli.js';
import { filesUnder } from '../support/files.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { until } from '../support/poll.js';
import { UPGRADE_KEYS } from '../support/upgrade-keys.js';
import { SPEC_LOG_FIELDS } from './helpers.js';
import {
  adjust,
  FIXTURES,
  fixtureDirs,
  pgAdmin,
  restore,
  TEST_DATABASE_URL,
  type Manifest,
} from './upgrade-fixture-store.js';

/**
 * Stores written by OLD builds of tokenproxy (test/fixtures/upgrade/README.md: which commits, how
 * they were made) served by this one: the start upgrades the schema, and then the old API key, the
 * old tokens (forwarded with the real key opened from the old envelopes, or refused as before), the
 * old request log, events and webhook secret, `kek rotate` and the dashboard sign-in all work.
 */

type Json = Record<string, unknown>;
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Json;
}

for (const name of fixtureDirs) {
  const dir = path.join(FIXTURES, name);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Manifest;
  const skip = manifest.dialect === 'postgres' && TEST_DATABASE_URL === '';

  describe.skipIf(skip)(
    `a ${manifest.dialect} store made by ${manifest.commit.slice(0, 7)} (${name})`,
    () => {
      let mock: MockProvider;
      let receiver: Receiver;
      let dataDir: string;
      let work: string;
      let database: string | undefined;
      let server: ServerProcess;
      let dispatcher: Agent;
      const fromAddress = new Map<string, Agent>();
      let serverCa: string;

      const call = async (
        url: string,
        method: Dispatcher.HttpMethod,
        {
          body,
          headers = {},
          via = dispatcher,
        }: { body?: unknown; headers?: Record<string, string>; via?: Agent } = {},
      ): Promise<Answer> => {
        const res = await request(url, {
          method,
          dispatcher: via,
          headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await res.body.text();
        return {
          status: res.statusCode,
          headers: res.headers,
          body: (text === '' ? {} : JSON.parse(text)) as Json,
        };
      };
      const api = (
        method: Dispatcher.HttpMethod,
        urlPath: string,
        body?: unknown,
        headers: Record<string, string> = {},
      ) =>
        call(`${server.apiUrl}/v1${urlPath}`, method, {
          body,
          headers: { authorization: `Bearer ${manifest.api_key}`, ...headers },
        });
      const list = async (urlPath: string): Promise<Json[]> => {
        const res = await api('GET', urlPath);
        expect(res.status, `GET ${urlPath}: ${JSON.stringify(res.body)}`).toBe(200);
        return res.body.data as Json[];
      };
      /** A chat completion through the proxy, from the given loopback address (each refusal from its own). */
      const proxied = (token: keyof Manifest['tokens'], origin: string, address = '127.0.0.1') => {
        let via = fromAddress.get(address);
        if (via === undefined) {
          // undici's `connect.localAddress` is not used by its connector: pass it on each connect.
          const connector = buildConnector({ ca: serverCa });
          via = new Agent({
            connect: (options, done) => connector({ ...options, localAddress: address }, done),
          });
          fromAddress.set(address, via);
        }
        return call(`${server.proxyUrl}/mock/v1/chat/completions`, 'POST', {
          via,
          body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
          headers: { authorization: `Bearer ${manifest.tokens[token].sanitized_key}`, origin },
        });
      };
      const lastKeySent = () => mock.received.at(-1)?.headers.authorization;

      beforeAll(async () => {
        mock = await startMockProvider();
        receiver = await startReceiver();
        dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-upgrade-'));
        work = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-upgrade-conf-'));
        database = await restore(dir, manifest, dataDir);
        await adjust(dataDir, database, receiver.url);
        await writeFile(path.join(work, 'ca.pem'), mock.caCertPem);
        await writeFile(
          path.join(work, 'config.json'),
          JSON.stringify({
            providers: { mock: { base_url: mock.url, auth: 'bearer' } },
            allow_private_webhooks: true,
          }),
        );
        server = await startServe([
          '--data-dir',
          dataDir,
          '--config',
          path.join(work, 'config.json'),
          '--provider-ca',
          path.join(work, 'ca.pem'),
          ...(database === undefined ? [] : ['--database', database]),
        ]);
        serverCa = await readFile(path.join(dataDir, 'tls', 'cert.pem'), 'utf8');
        dispatcher = new Agent({ connect: { ca: serverCa } });
      });

      afterAll(async () => {
        const code = await server?.stop();
        await dispatcher?.close();
        for (const agent of fromAddress.values()) await agent.close();
        await mock?.close();
        await receiver?.close();
        if (database !== undefined) {
          const dbName = new URL(database).pathname.slice(1);
          await pgAdmin((client) => client.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
        }
        await rm(dataDir, { recursive: true, force: true });
        await rm(work, { recursive: true, force: true });
        expect(code).toBe(0);
      });

      it('starts, applying exactly the migrations the old version lacked', () => {
        const line = server
          .stdout()
          .split('\n')
          .find((l) => l.includes('store schema upgraded'));
        expect(line, server.stdout()).toBeDefined();
        const applied = (JSON.parse(line ?? '{}') as { migrations: string[] }).migrations;
        expect(applied).toEqual(MIGRATION_NAMES.filter((m) => !manifest.migrations.includes(m)));
      });

      it('accepts the old API key, and keeps the account', async () => {
        const account = await api('GET', '/account');
        expect(account.status).toBe(200);
        expect(account.body).toMatchObject({
          account_id: manifest.account_id,
          alert_email: 'ops@example.com',
        });
        expect(
          await api('GET', '/account', undefined, { authorization: `Bearer svc_sk_${'1'.repeat(43)}` }),
        ).toMatchObject({ status: 401 });
      });

      it('lists the old tokens and keys with their fields, statuses and hints as before', async () => {
        const tokens = await list('/tokens?limit=100');
        for (const [label, expected] of Object.entries(manifest.tokens)) {
          const token = tokens.find((t) => t.token_id === expected.token_id);
          expect(token, label).toBeDefined();
          expect(Object.keys(token ?? {}).sort()).toEqual(TOKEN_FIELDS);
          expect(token?.status, label).toBe(expected.expect);
          const before = manifest.before.tokens.data.find((t) => t.token_id === expected.token_id) ?? {};
          for (const field of [
            'name',
            'target_provider',
            'real_key_ref',
            'authorized_origins',
            'authorized_ips',
            'rate_limit',
            'created_at',
            'expires_at',
            'revoked_at',
            'sanitized_key_hint',
          ]) {
            expect(token?.[field], `${label}.${field}`).toEqual(before[field]);
          }
        }
        const keys = await list('/keys?limit=100');
        for (const [label, expected] of Object.entries(manifest.keys)) {
          const key = keys.find((k) => k.key_id === expected.key_id);
          expect(key, label).toBeDefined();
          expect(Object.keys(key ?? {}).sort()).toEqual(KEY_FIELDS);
          expect(key?.hint, label).toBe(UPGRADE_KEYS[expected.real_key].slice(-4));
        }
        expect(keys.find((k) => k.key_id === manifest.keys.shared?.key_id)?.rotated_at).toMatch(/Z$/);
      });

      it('forwards the old tokens with the real keys opened from the old envelopes', async () => {
        const bound = await proxied('bound', 'https://app.example.com');
        expect(bound.status, JSON.stringify(bound.body)).toBe(200);
        expect(lastKeySent()).toBe(`Bearer ${UPGRADE_KEYS.shared}`);
        const own = await proxied('own', 'https://app.example.org');
        expect(own.status, JSON.stringify(own.body)).toBe(200);
        expect(lastKeySent()).toBe(`Bearer ${UPGRADE_KEYS.own}`);
      });

      it('refuses the old tokens exactly as before: origin, IP, revoked, expired', async () => {
        const sent = mock.received.length;
        expect((await proxied('bound', 'https://evil.example.net', '127.0.0.2')).body).toMatchObject({
          error: { code: 'origin_not_allowed' },
        });
        expect((await proxied('bound', 'https://app.example.com', '127.0.0.3')).body).toMatchObject({
          error: { code: 'ip_not_allowed' },
        });
        const revoked = await proxied('revoked', 'http://localhost:3000', '127.0.0.4');
        expect([revoked.status, revoked.body.error]).toMatchObject([401, { code: 'token_revoked' }]);
        const expired = await proxied('expired', 'http://localhost:3000', '127.0.0.5');
        expect([expired.status, expired.body.error]).toMatchObject([401, { code: 'token_expired' }]);
        expect(mock.received.length).toBe(sent);
      });

      it('lists the old request log, anomalies and events beside the new ones, in the current shapes', async () => {
        const oldLogs = manifest.before.logs?.data ?? [];
        const logs = await until('the new request-log records', async () => {
          const data = await list('/logs?limit=100');
          return data.length >= oldLogs.length + 6 && data;
        });
        for (const record of logs) for (const field of SPEC_LOG_FIELDS) expect(record).toHaveProperty(field);
        const fields = Object.keys(logs[0] ?? {}).sort();
        for (const record of logs) expect(Object.keys(record).sort()).toEqual(fields);
        for (const old of oldLogs) {
          const now = logs.find((r) => r.request_id === old.request_id);
          expect(now, String(old.request_id)).toBeDefined();
          for (const [field, value] of Object.entries(old)) {
            // error_code arrived with migration 0006: rows made before it have null.
            if (field === 'error_code' && !manifest.migrations.includes('0006_request_log_error_code'))
              continue;
            expect(now?.[field], `${String(old.request_id)}.${field}`).toEqual(value);
          }
        }
        const oldAnomalies = manifest.before.anomalies?.data ?? [];
        // The refusals' entries go through their own queue, apart from the request log's records.
        const anomalies = await until('the new anomaly entries', async () => {
          const data = await list('/anomalies?limit=100');
          return data.length > oldAnomalies.length && data;
        });
        for (const old of oldAnomalies) expect(anomalies).toContainEqual(expect.objectContaining(old));

        const events = await list('/events?limit=100');
        for (const old of manifest.before.events?.data ?? []) {
          expect(events.find((e) => e.id === old.id)).toMatchObject({
            type: old.type,
            created_at: old.created_at,
          });
        }
        expect((await api('GET', '/usage')).status).toBe(200);
        // The two forwarded just now, counted off the request path.
        await until('the account usage to count the new requests', async () => {
          const account = await api('GET', '/account');
          return (account.body.usage as { requests: number }).requests >= 2;
        });
      });

      it.runIf(manifest.features.webhooks)(
        'signs webhook deliveries with the secret the old version made',
        async () => {
          const webhook = manifest.webhook;
          if (webhook === undefined) throw new Error('manifest without webhook');
          const ping = await api('POST', `/webhooks/${webhook.webhook_id}/test`);
          expect(ping.status, JSON.stringify(ping.body)).toBe(202);
          const got = await until('the ping delivery', () =>
            receiver.requests.find((r) => r.headers['webhook-id'] === ping.body.event_id),
          );
          const key = Buffer.from(webhook.secret.slice('whsec_'.length), 'base64');
          const signed = `${String(got.headers['webhook-id'])}.${String(got.headers['webhook-timestamp'])}.${got.body}`;
          expect(got.headers['webhook-signature']).toBe(
            `v1,${createHmac('sha256', key).update(signed).digest('base64')}`,
          );
        },
      );

      // f068190 stored a plain SHA-256 fingerprint, replaced by the keyed one 31 minutes later in the
      // same session: its records are not matched (docs/decisions.md, "Stores made by old builds").
      const plainFingerprint = manifest.commit.startsWith('f068190');
      it.runIf(manifest.features.idempotency && !plainFingerprint)(
        'replays the first answer to a retry with the same Idempotency-Key made before the upgrade',
        async () => {
          const idem = manifest.keys.idempotent;
          const retry = await api(
            'POST',
            '/keys',
            { name: 'idempotent', provider: 'mock', real_key: UPGRADE_KEYS.idempotent },
            { 'idempotency-key': idem?.idempotency_key ?? '' },
          );
          expect(retry.status, JSON.stringify(retry.body)).toBe(201);
          expect(retry.body.key_id).toBe(idem?.key_id);
        },
      );

      it.runIf(manifest.features.idempotency && plainFingerprint)(
        'refuses a retry of a record with the plain fingerprint as a conflict: nothing is created twice',
        async () => {
          const idem = manifest.keys.idempotent;
          const before = await api('GET', '/keys?limit=100');
          const retry = await api(
            'POST',
            '/keys',
            { name: 'idempotent', provider: 'mock', real_key: UPGRADE_KEYS.idempotent },
            { 'idempotency-key': idem?.idempotency_key ?? '' },
          );
          expect(retry.status, JSON.stringify(retry.body)).toBe(409);
          expect(retry.body).toMatchObject({ error: { code: 'idempotency_conflict' } });
          expect((await api('GET', '/keys?limit=100')).body).toEqual(before.body);
        },
      );

      it('signs in to the dashboard with the old API key; a session from before the upgrade is over', async () => {
        const origin = new URL(server.apiUrl).origin;
        const signIn = await call(`${server.apiUrl}/v1/session`, 'POST', {
          body: { api_key: manifest.api_key },
          headers: { origin },
        });
        expect(signIn.status, JSON.stringify(signIn.body)).toBe(201);
        const cookie = /tokenproxy_session=[^;]+/.exec(String(signIn.headers['set-cookie']))?.[0] ?? '';
        expect((await call(`${server.apiUrl}/v1/account`, 'GET', { headers: { cookie } })).status).toBe(200);
        if (manifest.session_cookie !== undefined) {
          const old = await call(`${server.apiUrl}/v1/account`, 'GET', {
            headers: { cookie: `tokenproxy_session=${manifest.session_cookie}` },
          });
          expect(old.status).toBe(401);
        }
      });

      it('rotates the KEK of the old store while serving; the old tokens keep their real keys', async () => {
        const rotated = await runCli(
          [
            'kek',
            'rotate',
            '--data-dir',
            dataDir,
            ...(database === undefined ? [] : ['--database', database]),
          ],
          {},
          60_000,
        );
        expect(rotated.code, rotated.stderr).toBe(0);
        const bound = await proxied('bound', 'https://app.example.com');
        expect(bound.status).toBe(200);
        expect(lastKeySent()).toBe(`Bearer ${UPGRADE_KEYS.shared}`);
        expect((await proxied('own', 'https://app.example.org')).status).toBe(200);
        expect(lastKeySent()).toBe(`Bearer ${UPGRADE_KEYS.own}`);
      });
    },
  );
}

describe('the upgrade fixtures', () => {
  it('are there, one per old commit and database', () => {
    expect(fixtureDirs.length).toBeGreaterThanOrEqual(4);
  });

  it('hold no provider key in clear, in any encoding', async () => {
    for (const file of await filesUnder(FIXTURES)) {
      const raw = await readFile(file);
      const bytes = file.endsWith('.gz') ? gunzipSync(raw) : raw;
      const text = bytes.toString('latin1');
      for (const [name, key] of Object.entries(UPGRADE_KEYS)) {
        const plain = Buffer.from(key);
        for (const form of [
          key,
          plain.toString('hex'),
          plain.toString('hex').toUpperCase(),
          plain.toString('base64').slice(0, 40),
          plain.toString('base64url').slice(0, 40),
          Buffer.from(key, 'utf16le').toString('latin1'),
        ]) {
          expect(text.includes(form), `${name} in ${path.relative(FIXTURES, file)}`).toBe(false);
        }
        // The distinctive tail alone (a key cut or re-encoded around its prefix).
        expect(text.includes(key.slice(-16)), `${name} tail in ${file}`).toBe(false);
      }
    }
  });
});
