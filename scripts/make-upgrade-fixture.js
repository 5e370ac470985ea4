#!/usr/bin/env node
// Makes one upgrade fixture (test/fixtures/upgrade/README.md): runs an OLD build of tokenproxy on a
// fresh data dir (or PostgreSQL database), uses it the way a user does through its management API
// and proxy, stops it with SIGTERM and keeps what it wrote.
//
//   node scripts/make-upgrade-fixture.js --old <checkout of an old commit, built> --out <dir>
//        [--node <node binary for the old build>] [--database postgres://…/upg_review_x]
//        [--port-base 24100]
//
// Run it with Node 24 (it imports two .ts helpers of this repo, whose types Node strips). Writes
// into --out: master.key, manifest.json and tokenproxy.db (SQLite, vacuumed) or dump.sql (pg_dump
// --inserts, plain SQL). Every secret written is a test value.
import { Buffer } from 'node:buffer';
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { UPGRADE_KEYS } from '../test/support/upgrade-keys.ts';
import { startFixtureMock } from './upgrade-fixture-mock.js';

const { values: args } = parseArgs({
  options: {
    old: { type: 'string' },
    out: { type: 'string' },
    node: { type: 'string', default: process.execPath },
    database: { type: 'string' },
    'port-base': { type: 'string', default: '24100' },
  },
});
if (!args.old || !args.out) throw new Error('--old and --out are required');
const oldDir = path.resolve(args.old);
const outDir = path.resolve(args.out);
const portBase = Number(args['port-base']);
const apiPort = portBase;
const proxyPort = portBase + 1;
const oldSource = (file) => {
  try {
    return readFileSync(path.join(oldDir, file), 'utf8');
  } catch {
    return '';
  }
};

const { mock, received, caCertPem, mockUrl } = await startFixtureMock(portBase + 2);

const work = mkdtempSync(path.join(os.tmpdir(), 'upg-fixture-'));
const dataDir = path.join(work, 'data');
const caFile = path.join(work, 'mock-ca.pem');
writeFileSync(caFile, caCertPem);
const webhooksSupported = oldSource('src/config/settings.ts').includes('allow_private_webhooks');
const config = { providers: { mock: { base_url: mockUrl, auth: 'bearer' } } };
if (webhooksSupported) config.allow_private_webhooks = true;
const configFile = path.join(work, 'config.json');
writeFileSync(configFile, JSON.stringify(config));

const serveArgs = [
  path.join(oldDir, 'bin/tokenproxy'),
  'serve',
  '--data-dir',
  dataDir,
  '--api-port',
  String(apiPort),
  '--proxy-port',
  String(proxyPort),
  '--config',
  configFile,
  '--provider-ca',
  caFile,
  ...(args.database ? ['--database', args.database] : []),
];
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TOKENPROXY_')));
const child = spawn(args.node, serveArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] });
let stderr = '';
let stdout = '';
child.stderr.on('data', (d) => (stderr += d));
child.stdout.on('data', (d) => (stdout += d));
const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
for (let i = 0; !stderr.includes('Ready.'); i++) {
  if (child.exitCode !== null || i > 600) throw new Error(`old serve did not start:\n${stderr}\n${stdout}`);
  await sleep(100);
}
const apiKey = /svc_sk_[1-9A-HJ-NP-Za-km-z]{43}/.exec(stderr)?.[0];
if (!apiKey) throw new Error(`no API key printed:\n${stderr}`);
const serverCa = readFileSync(path.join(dataDir, 'tls/cert.pem'));

function call(port, method, urlPath, { headers = {}, body, localAddress } = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        servername: 'localhost',
        port,
        localAddress,
        method,
        path: urlPath,
        ca: serverCa,
        headers: {
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode, headers: res.headers, json, text });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
const api = async (method, urlPath, body, headers = {}) =>
  call(apiPort, method, `/v1${urlPath}`, {
    body,
    headers: { authorization: `Bearer ${apiKey}`, ...headers },
  });
const must = (res, status, what) => {
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${res.text}`);
  return res.json;
};

const manifest = {
  commit: execFileSync('git', ['-C', oldDir, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim(),
  subject: execFileSync('git', ['-C', oldDir, 'log', '-1', '--format=%s'], { encoding: 'utf8' }).trim(),
  node: execFileSync(args.node, ['--version'], { encoding: 'utf8' }).trim(),
  dialect: args.database ? 'postgres' : 'sqlite',
  made_at: new Date().toISOString(),
  api_key: apiKey,
  account_id: undefined,
  keys: {},
  tokens: {},
  requests: [],
  features: { webhooks: false, idempotency: false, proxy: false, logs: false, events: false, session: false },
};

const account = must(await api('GET', '/account'), 200, 'GET /v1/account');
manifest.account_id = account.account_id ?? account.id;
must(await api('PATCH', '/account', { alert_email: 'ops@example.com' }), 200, 'PATCH /v1/account');

// Keys: one rotated, one made with an Idempotency-Key (a header old versions ignore).
const shared = must(
  await api('POST', '/keys', {
    name: 'shared',
    provider: 'mock',
    real_key: UPGRADE_KEYS.sharedBeforeRotation,
  }),
  201,
  'POST /v1/keys',
);
must(
  await api('POST', `/keys/${shared.key_id}/rotate`, { real_key: UPGRADE_KEYS.shared }),
  200,
  'POST /v1/keys/:id/rotate',
);
manifest.keys.shared = { key_id: shared.key_id, real_key: 'shared' };
const other = must(
  await api('POST', '/keys', { name: 'other', provider: 'mock', real_key: UPGRADE_KEYS.other }),
  201,
  'POST /v1/keys other',
);
manifest.keys.other = { key_id: other.key_id, real_key: 'other' };
const idemBody = { name: 'idempotent', provider: 'mock', real_key: UPGRADE_KEYS.idempotent };
const idemKey = 'upgrade-fixture-idempotency-1';
const idem1 = await api('POST', '/keys', idemBody, { 'idempotency-key': idemKey });
const idem2 = await api('POST', '/keys', idemBody, { 'idempotency-key': idemKey });
must(idem1, 201, 'POST /v1/keys idempotent');
manifest.features.idempotency = idem2.status === 201 && idem2.json?.key_id === idem1.json.key_id;
manifest.keys.idempotent = { key_id: idem1.json.key_id, real_key: 'idempotent', idempotency_key: idemKey };
if (!manifest.features.idempotency)
  manifest.keys.idempotent_replay = { key_id: idem2.json?.key_id, real_key: 'idempotent' };

// Tokens. The free plan allows 3 active: the revoked one is made (and revoked) first.
const createToken = async (label, body, expect) => {
  const token = must(
    await api('POST', '/tokens', { provider: 'mock', ...body }),
    201,
    `POST /v1/tokens ${label}`,
  );
  manifest.tokens[label] = {
    token_id: token.token_id,
    sanitized_key: token.sanitized_key,
    key_id: token.real_key_ref,
    expect,
  };
  return token;
};
const revoked = await createToken(
  'revoked',
  { name: 'revoked', allowed_hosts: ['localhost'], key_id: other.key_id },
  'revoked',
);
must(await api('DELETE', `/tokens/${revoked.token_id}`), 200, 'DELETE /v1/tokens/:id');
await createToken(
  'bound',
  {
    name: 'bound',
    allowed_hosts: ['app.example.com', 'https://admin.example.com:8443'],
    allowed_ips: ['127.0.0.1', '::1', '10.0.0.0/8'],
    rate_limit: { requests: 1000, window: '1m' },
    key_id: shared.key_id,
  },
  'active',
);
const own = await createToken(
  'own',
  {
    name: 'own',
    allowed_hosts: ['*.example.org'],
    real_key: UPGRADE_KEYS.own,
    expires_at: '2099-01-01T00:00:00.000Z',
  },
  'active',
);
manifest.keys.own = { key_id: own.real_key_ref, real_key: 'own' };
const expiresAt = new Date(Date.now() + 3000).toISOString();
await createToken(
  'expired',
  { name: 'expired', allowed_hosts: ['localhost'], key_id: other.key_id, expires_at: expiresAt },
  'expired',
);

// A webhook endpoint (subscribed to everything, so the revoke above and the breach below reach it).
if (webhooksSupported) {
  const webhook = await api('POST', '/webhooks', { url: `${mockUrl}/webhook`, events: ['*'] });
  if (webhook.status === 201) {
    manifest.features.webhooks = true;
    manifest.webhook = {
      webhook_id: webhook.json.webhook_id ?? webhook.json.id,
      secret: webhook.json.secret,
    };
  }
}

// Proxied requests: forwarded, refused by origin, revoked, missing, expired.
// Each refused request comes from an address of its own (127.0.0.x): a refusal puts its address in
// backoff, which would answer the next one 429 ip_backoff instead.
const proxy = async (label, token, origin, localAddress = '127.0.0.1') => {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${manifest.tokens[token].sanitized_key}`;
  if (origin) headers.origin = origin;
  const res = await call(proxyPort, 'POST', '/mock/v1/chat/completions', {
    headers,
    localAddress,
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
  });
  manifest.requests.push({
    label,
    token: token ?? null,
    origin: origin ?? null,
    status: res.status,
    code: res.json?.error?.code ?? null,
    request_id: res.headers['x-tokenproxy-request-id'] ?? null,
  });
  return res;
};
const first = await proxy('forwarded', 'bound', 'https://app.example.com');
manifest.features.proxy = first.status === 200;
if (manifest.features.proxy) {
  await proxy('forwarded again', 'bound', 'https://app.example.com');
  await proxy('own key', 'own', 'https://app.example.org');
  await proxy('origin refused', 'bound', 'https://evil.example.net', '127.0.0.2');
  await proxy('revoked', 'revoked', 'http://localhost:3000', '127.0.0.3');
  await proxy('no token', undefined, 'http://localhost:3000', '127.0.0.4');
  while (Date.now() < Date.parse(expiresAt) + 200) await sleep(100);
  await proxy('expired', 'expired', 'http://localhost:3000', '127.0.0.5');
}
manifest.mock_received = received
  .filter((r) => !r.path.startsWith('/webhook'))
  .map((r) => ({
    path: r.path,
    key: Object.entries(UPGRADE_KEYS).find(([, k]) => r.authorization === `Bearer ${k}`)?.[0] ?? null,
  }));

// A dashboard session, where the version has one.
const session = await call(apiPort, 'POST', '/v1/session', {
  body: { api_key: apiKey },
  headers: { origin: `https://127.0.0.1:${apiPort}` },
});
if (session.status === 201) {
  manifest.features.session = true;
  manifest.session_cookie = /tokenproxy_session=([^;]+)/.exec(String(session.headers['set-cookie']))?.[1];
}

// Wait for the batched writers: the request log, and the events of the revoke, the breach and the expiry.
if (manifest.features.proxy) {
  for (let i = 0; i < 150; i++) {
    const logs = await api('GET', '/logs?limit=100');
    if (logs.status === 404) break;
    manifest.features.logs = true;
    if (logs.json.data.length >= manifest.requests.length) break;
    await sleep(200);
  }
}
const events = await api('GET', '/events?limit=100');
if (events.status === 200) {
  manifest.features.events = true;
  for (let i = 0; i < 100 && !events.json.data.some((e) => e.type === 'token.expired'); i++) {
    await sleep(200);
    Object.assign(events, await api('GET', '/events?limit=100'));
  }
}
await sleep(1500);
const snapshot = async (p) => {
  const res = await api('GET', p);
  return res.status === 200 ? res.json : null;
};
manifest.before = {
  account: await snapshot('/account'),
  tokens: await snapshot('/tokens?limit=100'),
  keys: await snapshot('/keys?limit=100'),
  logs: await snapshot('/logs?limit=100'),
  anomalies: await snapshot('/anomalies?limit=100'),
  events: await snapshot('/events?limit=100'),
  webhooks: await snapshot('/webhooks?limit=100'),
};

child.kill('SIGTERM');
const { code, signal } = await exited;
manifest.old_exit = { code, signal };
mock.close();
mock.closeAllConnections();

mkdirSync(outDir, { recursive: true });
copyFileSync(path.join(dataDir, 'master.key'), path.join(outDir, 'master.key'));
if (args.database) {
  const dump = execFileSync('pg_dump', ['--inserts', '--no-owner', '--no-privileges', args.database], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  // psql meta-commands (\restrict, \unrestrict) are not SQL: the test sends the dump as one query.
  writeFileSync(
    path.join(outDir, 'dump.sql'),
    dump
      .split('\n')
      .filter((line) => !line.startsWith('\\'))
      .join('\n'),
  );
  manifest.migrations = execFileSync(
    'psql',
    ['-At', args.database, '-c', 'select name from kysely_migration order by name'],
    {
      encoding: 'utf8',
    },
  )
    .trim()
    .split('\n');
} else {
  const db = path.join(outDir, 'tokenproxy.db');
  rmSync(db, { force: true });
  execFileSync('sqlite3', [path.join(dataDir, 'tokenproxy.db'), `VACUUM INTO '${db}'`]);
  manifest.migrations = execFileSync('sqlite3', [db, 'select name from kysely_migration order by name'], {
    encoding: 'utf8',
  })
    .trim()
    .split('\n');
}
writeFileSync(path.join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
rmSync(work, { recursive: true, force: true });
process.stdout.write(
  `fixture written to ${outDir} (${manifest.commit}, ${manifest.migrations.length} migrations)\n`,
);
process.stdout.write(
  `${JSON.stringify(manifest.features)} ` +
    `${JSON.stringify(manifest.requests.map((r) => [r.label, r.status, r.code]))}\n`,
);
