import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  CertificateError,
  ConflictError,
  ConnectionError,
  InternalServerError,
  InvalidRequestError,
  NotFoundError,
  PermissionError,
  PlanLimitError,
  RateLimitError,
  TokenProxy,
  TokenProxyError,
  WebhookVerificationError,
  verifyWebhook,
  type FetchLike,
} from '../../clients/node/src/index.js';
import {
  startClientTestServer,
  startCountingProxy,
  startDroppingProxy,
  type ClientTestServer,
} from './support.js';

const SANITIZED = /^svc_hb_[1-9A-HJ-NP-Za-km-z]{43}$/;
const TOKEN_ID = /^[1-9A-HJ-NP-Za-km-z]{43}$/;

let t: ClientTestServer;
let hasWebhooks = false;

beforeAll(async () => {
  t = await startClientTestServer();
  hasWebhooks = await t.hasRoute('POST', '/webhooks');
});
afterAll(async () => {
  await t.stop();
});

async function client(options: { apiKey?: string; maxRetries?: number } = {}): Promise<TokenProxy> {
  return new TokenProxy({
    apiKey: options.apiKey ?? (await t.newAccount()),
    baseUrl: t.baseUrl,
    ca: t.ca,
    maxRetries: options.maxRetries ?? 2,
  });
}

const tokenParams = (name = 'web app') => ({
  name,
  provider: 'openai',
  realKey: 'sk-test-0123456789abcdefWXYZ',
  allowedHosts: ['app.example.com', 'localhost'],
});

describe('@tokenproxy/client against a real server', () => {
  it('creates, lists, gets and revokes tokens, camelCase with the token_id as id', async () => {
    const c = await client();
    const created = await c.tokens.create({
      ...tokenParams(),
      allowedIps: ['10.0.0.0/8'],
      rateLimit: { requests: 100, window: '1m' },
    });
    expect(created.id).toMatch(TOKEN_ID);
    expect(created.sanitizedKey).toMatch(SANITIZED);
    expect(created.authorizedOrigins).toEqual(['app.example.com', 'localhost']);
    expect(created.authorizedIps).toEqual(['10.0.0.0/8']);
    expect(created.rateLimit).toEqual({ requests: 100, window: '1m' });
    expect(created.targetProvider).toBe('openai');
    expect(created.realKeyRef).toMatch(/^key_/);
    expect(created.proxyBaseUrl).toBe(`${t.server.proxyUrl.replace('127.0.0.1', 'localhost')}/openai`);
    expect(created).not.toHaveProperty('token_id');
    expect(created).not.toHaveProperty('sanitized_key');

    const got = await c.tokens.get(created.id);
    expect(got).toEqual(Object.fromEntries(Object.entries(created).filter(([k]) => k !== 'sanitizedKey')));
    const page = await c.tokens.list();
    expect(page.data.map((x) => x.id)).toEqual([created.id]);
    expect(page.hasMore).toBe(false);
    expect(page.nextCursor).toBeNull();

    const revoked = await c.tokens.revoke(created.id);
    expect(revoked.status).toBe('revoked');
    expect(revoked.revokedAt).not.toBeNull();
    expect((await c.tokens.revoke(created.id)).revokedAt).toBe(revoked.revokedAt);
    expect((await c.tokens.list({ status: 'active' })).data).toEqual([]);
    expect((await c.tokens.list({ status: 'revoked' })).data.map((x) => x.id)).toEqual([created.id]);
  });

  it('creates, lists, gets, rotates and deletes keys; tokens can use a stored key', async () => {
    const c = await client();
    const key = await c.keys.create({
      name: 'prod',
      provider: 'openai',
      realKey: 'sk-prod-0123456789abcdefAAAA',
    });
    expect(key.id).toMatch(/^key_/);
    expect(key.hint).toBe('AAAA');
    const token = await c.tokens.create({
      name: 'x',
      provider: 'openai',
      keyId: key.id,
      allowedHosts: ['a.example'],
    });
    expect(token.realKeyRef).toBe(key.id);
    expect((await c.keys.get(key.id)).tokenCount).toBe(1);
    const rotated = await c.keys.rotate(key.id, { realKey: 'sk-prod-0123456789abcdefBBBB' });
    expect(rotated.hint).toBe('BBBB');
    expect(rotated.rotatedAt).not.toBeNull();
    expect((await c.keys.list()).data.map((k) => k.id)).toEqual([key.id]);
    const deleted = await c.keys.delete(key.id);
    expect(deleted.deletedAt).not.toBeNull();
    expect((await c.tokens.get(token.id)).status).toBe('revoked');
    const err = await c.keys.rotate(key.id, { realKey: 'sk-x-0123456789abcdef' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).code).toBe('key_deleted');
  });

  it('reads and updates the account and lists providers, logs and anomalies', async () => {
    const c = await client();
    const account = await c.account.get();
    expect(account.id).toMatch(/^acct_/);
    expect(account.plan).toBe('unlimited');
    expect(account.usage.activeTokens).toBe(0);
    const updated = await c.account.update({ name: 'renamed', alertEmail: 'ops@example.com' });
    expect(updated.name).toBe('renamed');
    expect(updated.alertEmail).toBe('ops@example.com');
    expect((await c.account.update({ alertEmail: null })).alertEmail).toBeNull();
    const providers = await c.providers.list();
    expect(providers.data.map((p) => p.id)).toContain('openai');
    expect(providers.data[0]).toHaveProperty('proxyBaseUrl');
    expect((await c.logs.list({ authorized: false })).data).toEqual([]);
    expect((await c.anomalies.list()).data).toEqual([]);
  });

  it('API keys: create (shown once) with a read-only scope, list, delete; the audit log names the key', async () => {
    const c = await client();
    const reader = await c.apiKeys.create({ name: 'dashboards', scope: 'read' });
    expect(reader).toMatchObject({ name: 'dashboards', scope: 'read' });
    expect(reader.id).toMatch(/^ak_/);
    expect(reader.apiKey).toMatch(/^svc_sk_/);
    const ops = await c.apiKeys.create({ name: 'ops' });
    expect(ops.scope).toBe('full');
    expect((await c.apiKeys.list()).data.map((k) => k.name)).toEqual(['ops', 'dashboards', 'default']);

    const readOnly = await client({ apiKey: reader.apiKey });
    expect((await readOnly.tokens.list()).data).toEqual([]);
    const refused = await readOnly.tokens.create(tokenParams()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PermissionError);
    expect((refused as PermissionError).code).toBe('insufficient_scope');

    const asOps = await client({ apiKey: ops.apiKey });
    const token = await asOps.tokens.create(tokenParams('audited'));
    const entries = (await c.audit.list({ objectId: token.id })).data;
    expect(entries).toEqual([
      expect.objectContaining({
        action: 'token.created',
        objectId: token.id,
        actor: { type: 'api_key', id: ops.id, name: 'ops' },
      }),
    ]);
    expect((await c.audit.list({ action: 'api_key.created' })).data.map((e) => e.objectId)).toEqual([
      ops.id,
      reader.id,
    ]);

    expect((await c.apiKeys.delete(reader.id)).id).toBe(reader.id);
    const gone = await (async () => {
      try {
        return await readOnly.tokens.list();
      } catch (err) {
        return err;
      }
    })();
    expect(gone).toBeInstanceOf(AuthenticationError);
  });

  it('edits a token, revokes all tokens (the kill switch) and reads usage', async () => {
    const c = await client();
    const a = await c.tokens.create(tokenParams('a'));
    const b = await c.tokens.create(tokenParams('b'));
    const edited = await c.tokens.update(a.id, {
      name: 'a2',
      allowedHosts: ['*.example.org'],
      rateLimit: { requests: 5, window: '1m' },
    });
    expect(edited).toMatchObject({ id: a.id, name: 'a2', authorizedOrigins: ['*.example.org'] });
    expect(edited.rateLimit).toEqual({ requests: 5, window: '1m' });
    expect((await c.tokens.update(a.id, { rateLimit: null })).rateLimit).toBeNull();
    const revoked = await c.tokens.revokeAll();
    expect(revoked.map((x) => x.id).sort()).toEqual([a.id, b.id].sort());
    expect(revoked.every((x) => x.status === 'revoked')).toBe(true);
    expect(await c.tokens.revokeAll()).toEqual([]);
    const usage = await c.usage.get({ window: '24h', bucket: '1h' });
    expect(usage.buckets).toHaveLength(24);
    expect(usage.forwarded).toBe(0);
    expect(usage.refusedByReason).toHaveProperty('originOrIpNotAllowed', 0);
    expect(usage.spend).toMatchObject({ requests: 0, costMicros: 0, byToken: [], byModel: [] });
  });

  it('sets budgets on tokens and the account, and reads spend against them', async () => {
    const c = await client();
    const t = await c.tokens.create({
      ...tokenParams('budgeted'),
      budget: { amountUsd: 20, period: 'month' },
    });
    expect(t.budget).toEqual({ amountUsd: 20, period: 'month' });
    const changed = await c.tokens.update(t.id, { budget: { tokens: 2_000_000, period: 'day' } });
    expect(changed.budget).toEqual({ tokens: 2_000_000, period: 'day' });
    const account = await c.account.update({ budget: { amountUsd: 100, period: 'total' } });
    expect(account.budget).toEqual({ amountUsd: 100, period: 'total' });
    const usage = await c.usage.get();
    expect(usage.budgets).toContainEqual(
      expect.objectContaining({ scope: 'token', tokenId: t.id, unit: 'tokens', limit: 2_000_000, used: 0 }),
    );
    expect(usage.budgets).toContainEqual(
      expect.objectContaining({ scope: 'account', tokenId: null, unit: 'usd', limit: 100, resetsAt: null }),
    );
    expect((await c.tokens.update(t.id, { budget: null })).budget).toBeNull();
    expect((await c.account.update({ budget: null })).budget).toBeNull();
    await c.tokens.revoke(t.id);
  });

  it('throws typed errors with status, code, param and request id', async () => {
    const c = await client();
    const notFound = await c.tokens.get('1'.repeat(43)).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound).toBeInstanceOf(TokenProxyError);
    expect(notFound).toMatchObject({ status: 404, code: 'token_not_found', type: 'not_found', param: 'id' });
    expect((notFound as NotFoundError).requestId).toMatch(/^req_/);

    const invalid = await c.tokens
      .create({ ...tokenParams(), allowedHosts: ['https://a.example/path'] })
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(InvalidRequestError);
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_parameter', param: 'allowed_hosts[0]' });

    const badKey = `svc_sk_${'1'.repeat(43)}`;
    const unauth = await new TokenProxy({ apiKey: badKey, baseUrl: t.baseUrl, ca: t.ca }).account
      .get()
      .catch((e: unknown) => e);
    expect(unauth).toBeInstanceOf(AuthenticationError);
    expect(unauth).toMatchObject({ status: 401, code: 'invalid_api_key' });
    // The API key is in no error and not in the client's printed form.
    expect(JSON.stringify(unauth) + String(unauth) + inspect(unauth)).not.toContain(badKey);
    expect(inspect(new TokenProxy({ apiKey: badKey, baseUrl: t.baseUrl }), { depth: 5 })).not.toContain(
      badKey,
    );

    const free = await client({ apiKey: t.freeApiKey });
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await free.tokens.create(tokenParams(`free ${i}`)));
    const limit = await free.tokens.create(tokenParams('fourth')).catch((e: unknown) => e);
    expect(limit).toBeInstanceOf(PlanLimitError);
    expect(limit).toMatchObject({ status: 403, code: 'plan_limit_exceeded' });
    for (const m of made) await free.tokens.revoke(m.id);
  });

  it('pages: the first page has data, hasMore and nextCursor; for await walks every page', async () => {
    const c = await client();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.unshift((await c.tokens.create(tokenParams(`t${i}`))).id);
    const first = await c.tokens.list({ limit: 2 });
    expect(first.data.map((x) => x.id)).toEqual(ids.slice(0, 2));
    expect(first.hasMore).toBe(true);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await first.nextPage();
    expect(second?.data.map((x) => x.id)).toEqual(ids.slice(2, 4));

    const all: string[] = [];
    for await (const token of c.tokens.list({ limit: 2 })) all.push(token.id);
    expect(all).toEqual(ids);
    const fromPage: string[] = [];
    for await (const token of first) fromPage.push(token.id);
    expect(fromPage).toEqual(ids);
  });

  it('retries a create after a dropped connection with the same Idempotency-Key: one token', async () => {
    const apiKey = await t.newAccount();
    const proxy = await startDroppingProxy(t);
    try {
      const c = new TokenProxy({ apiKey, baseUrl: proxy.baseUrl, ca: t.ca, maxRetries: 2 });
      const created = await c.tokens.create(tokenParams('retried'));
      expect(created.sanitizedKey).toMatch(SANITIZED);
      expect(proxy.connections()).toBe(2);
      const direct = await client({ apiKey });
      const tokens = (await direct.tokens.list()).data;
      expect(tokens.map((x) => x.id)).toEqual([created.id]);
      expect((await direct.keys.list()).data).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it('trusts the server only through the given CA: without it the TLS check fails', async () => {
    const c = new TokenProxy({ apiKey: t.freeApiKey, baseUrl: t.baseUrl, maxRetries: 0 });
    const err = await c.account.get().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(String((err as Error).cause)).toMatch(/self.signed|certificate/i);
  });

  it('an untrusted certificate is a CertificateError saying how to trust it, and is not retried', async () => {
    const counting = await startCountingProxy(t);
    try {
      const c = new TokenProxy({ apiKey: t.freeApiKey, baseUrl: counting.baseUrl, maxRetries: 2 });
      const err = await c.tokens.create(tokenParams()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CertificateError);
      expect(err).toBeInstanceOf(ConnectionError);
      const e = err as CertificateError;
      expect(e.code).toBe('certificate_untrusted');
      expect(e.status).toBeUndefined();
      expect(e.message).toContain('`ca` option');
      expect(e.message).toContain('NODE_EXTRA_CA_CERTS=tokenproxy-data/tls/cert.pem');
      expect(e.message).not.toContain(t.freeApiKey);
      expect(counting.connections()).toBe(1);

      // Through a user-supplied fetch (undici under Node) the same error, not retried either.
      const viaFetch = new TokenProxy({
        apiKey: t.freeApiKey,
        baseUrl: counting.baseUrl,
        maxRetries: 2,
        fetch: fetch as unknown as FetchLike,
      });
      const fetchErr = await viaFetch.account.get().catch((x: unknown) => x);
      expect(fetchErr).toBeInstanceOf(CertificateError);
      expect((fetchErr as CertificateError).code).toBe('certificate_untrusted');
      expect(counting.connections()).toBe(2);

      // And trusting the generated certificate by path (the `ca` option) works through the same hop.
      const trusted = new TokenProxy({ apiKey: t.freeApiKey, baseUrl: counting.baseUrl, ca: t.caFile });
      expect((await trusted.account.get()).plan).toBe('free');
    } finally {
      await counting.close();
    }
  });

  it('webhooks: create (secret once), list, get, delete, and a real delivery verifies', async (ctx) => {
    if (!hasWebhooks) ctx.skip('POST /v1/webhooks is not in this server build yet');
    const received: { body: string; headers: http.IncomingHttpHeaders }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push({ body, headers: req.headers });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const c = await client();
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const hook = await c.webhooks.create({ url, events: ['token.revoked'] });
      expect(hook.id).toMatch(/^wh_/);
      expect(hook.secret).toMatch(/^whsec_/);
      expect(hook.events).toEqual(['token.revoked']);
      const got = await c.webhooks.get(hook.id);
      expect(got).not.toHaveProperty('secret');
      expect(got.url).toBe(url);
      expect((await c.webhooks.list()).data.map((w) => w.id)).toEqual([hook.id]);

      const token = await c.tokens.create(tokenParams('watched'));
      await c.tokens.revoke(token.id);
      const deadline = Date.now() + 20_000;
      while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(received.length).toBeGreaterThan(0);
      const delivery = received[0];
      if (delivery === undefined) return;
      const event = verifyWebhook(delivery.body, delivery.headers, hook.secret);
      expect(event.type).toBe('token.revoked');
      expect(event.id).toBe(delivery.headers['webhook-id']);
      expect(event.data.tokenId ?? event.data.id).toBeDefined();
      expect(() => verifyWebhook(`${delivery.body} `, delivery.headers, hook.secret)).toThrow(
        WebhookVerificationError,
      );

      const events = await c.events.list({ type: 'token.revoked' });
      expect(events.data.map((e) => e.id)).toContain(event.id);
      // The delivery's outcome, as the dashboard's Webhooks view shows it.
      let deliveries = await c.webhooks.deliveries(hook.id);
      for (let i = 0; i < 50 && deliveries.data[0]?.status !== 'delivered'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        deliveries = await c.webhooks.deliveries(hook.id);
      }
      expect(deliveries.data[0]).toMatchObject({
        eventId: event.id,
        eventType: 'token.revoked',
        status: 'delivered',
      });
      expect(deliveries.data[0]?.id).toMatch(/^\S+$/);
      const deleted = await c.webhooks.delete(hook.id);
      expect(deleted.id).toBe(hook.id);
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
});

describe('retries (fake fetch)', () => {
  function fakeFetch(answers: { status: number; headers?: Record<string, string>; body?: unknown }[]) {
    const calls: { method: string; url: string; headers: Record<string, string> }[] = [];
    const fetch: FetchLike = (url, init) => {
      calls.push({ method: init.method, url, headers: init.headers });
      const answer = answers.shift() ?? { status: 500 };
      if (answer.status === 0) return Promise.reject(new Error('socket hang up'));
      const headers = new Headers(answer.headers);
      return Promise.resolve({
        status: answer.status,
        headers,
        text: () =>
          Promise.resolve(JSON.stringify(answer.body ?? { error: { code: 'internal_error', message: 'x' } })),
      });
    };
    return { fetch, calls };
  }
  const ok = { status: 201, body: { token_id: 'abc', sanitized_key: 'svc_hb_x', rate_limit: null } };

  it('retries network errors, 5xx and 429 (honouring Retry-After) with one Idempotency-Key', async () => {
    const { fetch, calls } = fakeFetch([
      { status: 0 },
      { status: 503 },
      { status: 429, headers: { 'retry-after': '0' } },
      ok,
    ]);
    const c = new TokenProxy({ apiKey: 'svc_sk_test', baseUrl: 'https://tp.example', fetch, maxRetries: 3 });
    const started = Date.now();
    const token = await c.tokens.create(tokenParams());
    expect(token).toEqual({ id: 'abc', sanitizedKey: 'svc_hb_x', rateLimit: null });
    expect(calls).toHaveLength(4);
    expect(calls[0]?.url).toBe('https://tp.example/v1/tokens');
    const keys = new Set(calls.map((x) => x.headers['idempotency-key']));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('gives up after maxRetries with the typed error, and never retries a 4xx', async () => {
    const five = fakeFetch([{ status: 500 }, { status: 500 }]);
    const c = new TokenProxy({
      apiKey: 'svc_sk_test',
      baseUrl: 'https://tp.example',
      fetch: five.fetch,
      maxRetries: 1,
    });
    await expect(c.tokens.list()).rejects.toBeInstanceOf(InternalServerError);
    expect(five.calls).toHaveLength(2);

    const limited = fakeFetch([
      {
        status: 429,
        headers: { 'retry-after': '3600' },
        body: { error: { code: 'rate_limited', message: 'slow' } },
      },
    ]);
    const c2 = new TokenProxy({ apiKey: 'svc_sk_test', baseUrl: 'https://tp.example', fetch: limited.fetch });
    // A Retry-After beyond a minute is not slept through: the caller decides.
    await expect(c2.account.get()).rejects.toBeInstanceOf(RateLimitError);
    expect(limited.calls).toHaveLength(1);

    const four = fakeFetch([{ status: 400, body: { error: { code: 'invalid_parameter', message: 'no' } } }]);
    const c3 = new TokenProxy({ apiKey: 'svc_sk_test', baseUrl: 'https://tp.example', fetch: four.fetch });
    await expect(c3.tokens.create(tokenParams())).rejects.toBeInstanceOf(InvalidRequestError);
    expect(four.calls).toHaveLength(1);
  });

  it('a network error after the last retry is a ConnectionError', async () => {
    const c = new TokenProxy({ apiKey: 'svc_sk_test', baseUrl: 'https://127.0.0.1:1', maxRetries: 1 });
    await expect(c.account.get()).rejects.toBeInstanceOf(ConnectionError);
  });
});

describe('verifyWebhook', () => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const payload = JSON.stringify({
    id: 'evt_1',
    type: 'token.revoked',
    created_at: '2030-01-01T00:00:00.000Z',
    data: { token_id: 'abc' },
  });
  const sign = (id: string, ts: number, body: string, key = secret) =>
    createHmac('sha256', Buffer.from(key.slice('whsec_'.length), 'base64'))
      .update(`${id}.${ts}.${body}`)
      .digest('base64');
  const now = () => Math.floor(Date.now() / 1000);

  it('accepts a correctly signed payload (Standard Webhooks) and returns the camelCased event', () => {
    const ts = now();
    const headers = {
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(ts),
      'webhook-signature': `v1,${sign('evt_1', ts, payload)}`,
    };
    const event = verifyWebhook(payload, headers, secret);
    expect(event).toEqual({
      id: 'evt_1',
      type: 'token.revoked',
      createdAt: '2030-01-01T00:00:00.000Z',
      data: { tokenId: 'abc' },
    });
    expect(verifyWebhook(Buffer.from(payload), new Headers(headers), secret).id).toBe('evt_1');
  });

  it('agrees with the standardwebhooks reference implementation', () => {
    const ts = new Date();
    const signature = new StandardWebhook(secret).sign('msg_1', ts, payload);
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(ts.getTime() / 1000)),
      'webhook-signature': signature,
    };
    expect(verifyWebhook(payload, headers, secret).type).toBe('token.revoked');
  });

  it('accepts one valid signature among several, and refuses tampering, other secrets, stale or future timestamps', () => {
    const ts = now();
    const good = sign('evt_1', ts, payload);
    const other = `whsec_${randomBytes(24).toString('base64')}`;
    const h = (sig: string, t = ts, id = 'evt_1') => ({
      'webhook-id': id,
      'webhook-timestamp': String(t),
      'webhook-signature': sig,
    });
    expect(verifyWebhook(payload, h(`v1,${sign('evt_1', ts, payload, other)} v1,${good}`), secret).id).toBe(
      'evt_1',
    );
    const refuse = (body: string, headers: Record<string, string>) =>
      expect(() => verifyWebhook(body, headers, secret)).toThrow(WebhookVerificationError);
    refuse(payload.replace('abc', 'abd'), h(`v1,${good}`));
    refuse(payload, h(`v1,${good}`, ts, 'evt_2'));
    refuse(payload, h(`v1,${sign('evt_1', ts, payload, other)}`));
    refuse(payload, h(`v2,${good}`));
    refuse(payload, h(`v1,${sign('evt_1', ts - 301, payload)}`, ts - 301));
    refuse(payload, h(`v1,${sign('evt_1', ts + 301, payload)}`, ts + 301));
    refuse(payload, { 'webhook-id': 'evt_1' });
    // Within the 5-minute tolerance.
    expect(verifyWebhook(payload, h(`v1,${sign('evt_1', ts - 290, payload)}`, ts - 290), secret).id).toBe(
      'evt_1',
    );
  });
});
