import tls from 'node:tls';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  CertificateError,
  ConnectionError,
  InternalServerError,
  InvalidRequestError,
  NotFoundError,
  PlanLimitError,
  RateLimitError,
  TokenProxy,
  TokenProxyError,
  type FetchLike,
} from '../../clients/node/src/index.js';
import { client, SANITIZED, t, tokenParams, useClientTestServer } from './node-support.js';
import { startCountingProxy, startDroppingProxy } from './support.js';

useClientTestServer();

describe('@tokenproxy/client against a real server', () => {
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

  it('retries a delete after a dropped answer with the same Idempotency-Key: the first answer, not 404', async () => {
    const apiKey = await t.newAccount();
    const direct = await client({ apiKey });
    const webhook = await direct.webhooks.create({ url: 'https://hooks.example.com/in', events: ['*'] });
    const extraKey = await direct.apiKeys.create({ name: 'ci' });
    for (const remove of [
      (c: TokenProxy) => c.webhooks.delete(webhook.id),
      (c: TokenProxy) => c.apiKeys.delete(extraKey.id),
    ]) {
      const proxy = await startDroppingProxy(t);
      try {
        const c = new TokenProxy({ apiKey, baseUrl: proxy.baseUrl, ca: t.ca, maxRetries: 2 });
        const removed = await remove(c);
        expect(removed.id).toMatch(/^(wh|ak)_/);
        expect(proxy.connections()).toBe(2);
      } finally {
        await proxy.close();
      }
    }
    expect((await direct.webhooks.list()).data).toEqual([]);
    expect((await direct.apiKeys.list()).data.map((k) => k.name)).toEqual(['default']);
  });

  it('a given CA is trusted beside the default ones (NODE_EXTRA_CA_CERTS, public CAs), not instead', async () => {
    const defaults = tls.getCACertificates('default');
    // What NODE_EXTRA_CA_CERTS=<the server's certificate> would make the default.
    tls.setDefaultCACertificates([...defaults, t.ca]);
    try {
      // A CA that did not sign the server's certificate: alone it would make the server untrusted.
      const unrelated = tls.rootCertificates[0] ?? '';
      const c = new TokenProxy({ apiKey: t.freeApiKey, baseUrl: t.baseUrl, ca: unrelated, maxRetries: 0 });
      expect((await c.account.get()).plan).toBe('free');
    } finally {
      tls.setDefaultCACertificates(defaults);
    }
  });

  it('refuses an API key that cannot go into a header, without quoting it', () => {
    for (const [apiKey, what] of [
      ['svc_sk_SECRETSECRET\n', 'at position 20 (a line break)'],
      ['svc_sk_\u2026', 'at position 8 (the non-ASCII character U+2026)'],
      [' svc_sk_SECRETSECRET', 'at position 1 (a space or tab)'],
    ] as const) {
      const error = (() => {
        try {
          new TokenProxy({ apiKey, baseUrl: t.baseUrl });
        } catch (e) {
          return e as Error;
        }
        return undefined;
      })();
      expect(error, apiKey).toBeInstanceOf(TypeError);
      expect(error?.message).toContain(what);
      expect(error?.message).not.toContain('SECRET');
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
