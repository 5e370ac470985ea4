import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import {
  APP_ORIGIN,
  bearer,
  startProxyHarness,
  type Protocol,
  type ProxyHarness,
  type ProxyResponse,
} from './harness.js';
import { startScriptedUpstream, type ScriptedUpstream } from './upstream-fixture.js';

/**
 * A port nothing listens on. Not one the system just handed out and took back: with test files in
 * parallel, another file's server was given it again (a CI run saw a TLS server there instead of a
 * refusal). Port 1 is below the ephemeral range and no test listens on it.
 */
function closedPort(): Promise<number> {
  return Promise.resolve(1);
}

const UNKNOWN_TOKEN = `svc_hb_${'1'.repeat(43)}`;

/**
 * Every refusal and upstream-failure row of the proxy contract (DESIGN §4), asserted the same way over
 * each protocol the listener speaks: errors.test.ts runs them over HTTP/1.1, h2-errors.test.ts over h2.
 */
export function describeErrorRows(protocol: Protocol): void {
  for (const fixture of databases) {
    describe.skipIf(!fixture.available)(
      `proxy refusals and upstream failures (${fixture.name}, ${protocol})`,
      () => {
        let h: ProxyHarness;
        let clockOffset = 0;
        let token: string;
        let tokenId: string;
        /** Its CA is not given to the proxy: a provider whose certificate is not trusted. */
        let untrusted: ScriptedUpstream;
        /** Trusted, and resets the connection on /reset. */
        let resetting: ScriptedUpstream;

        beforeAll(async () => {
          const deadPort = await closedPort();
          untrusted = await startScriptedUpstream();
          resetting = await startScriptedUpstream();
          h = await startProxyHarness(fixture, {
            protocol,
            config: { upstreamHeadersTimeoutMs: 400 },
            now: () => Date.now() + clockOffset,
            extraCaPem: resetting.caCertPem,
            providers: () => [
              {
                id: 'closed',
                baseUrl: `https://127.0.0.1:${deadPort}`,
                auth: { kind: 'bearer' },
                builtin: false,
              },
              { id: 'untrusted', baseUrl: untrusted.url, auth: { kind: 'bearer' }, builtin: false },
              { id: 'resetting', baseUrl: resetting.url, auth: { kind: 'bearer' }, builtin: false },
            ],
          });
          ({ token, tokenId } = await h.createToken({ realKey: 'sk-errors-test-key-000000000000000' }));
        });
        afterAll(async () => {
          await h?.close();
          await untrusted?.close();
          await resetting?.close();
        });

        /** The proxy's own error: status, code, body shape, request id, and its one log record. */
        async function expectProxyError(
          res: ProxyResponse,
          status: number,
          code: string,
          record: { authorized: boolean; tokenId: string | null; forwarded?: boolean },
        ): Promise<void> {
          expect(res.status).toBe(status);
          expect(res.headers['content-type']).toBe('application/json');
          expect(res.headers['x-content-type-options']).toBe('nosniff');
          const id = res.headers['x-tokenproxy-request-id'];
          expect(id).toMatch(/^req_[1-9A-HJ-NP-Za-km-z]{22}$/);
          // The Anthropic SDKs read `request-id`, the OpenAI SDKs `x-request-id`.
          expect(res.headers['request-id']).toBe(id);
          expect(res.headers['x-request-id']).toBe(id);
          expect(res.json).toEqual({
            type: 'error',
            error: { type: 'tokenproxy_error', code, message: expect.any(String) as string, request_id: id },
          });
          expect(res.text).not.toContain('    at ');
          const logged = await h.recordOf(id);
          expect(logged).toMatchObject({
            status,
            authorized: record.authorized,
            tokenId: record.tokenId,
            errorCode: code,
          });
          expect(logged.forwarded).toBe(record.forwarded ?? false);
          await new Promise((resolve) => setTimeout(resolve, 20));
          expect(h.records.filter((r) => r.requestId === id)).toHaveLength(1);
        }

        it('404 route_not_found for an unknown provider or no provider segment', async () => {
          for (const path of ['/nope/v1/models', '/', '/?x=1', '//evil.example/x']) {
            const res = await h.send(path, { headers: bearer(token) });
            await expectProxyError(res, 404, 'route_not_found', { authorized: false, tokenId: null });
            // It says what was asked for, and what there is.
            const message = (res.json as { error: { message: string } }).error.message;
            expect(message).toMatch(/providers here: .*\bopenai\b/);
            if (path === '/nope/v1/models') expect(message).toContain('No provider "nope".');
          }
        });

        it('401 missing_token without a token', async () => {
          const res = await h.send('/openai/v1/models', { headers: { origin: APP_ORIGIN } });
          await expectProxyError(res, 401, 'missing_token', { authorized: false, tokenId: null });
        });

        it('401 invalid_token for a malformed token, another scheme, or an unknown token', async () => {
          for (const authorization of [
            'Bearer svc_hb_short',
            'Bearer sk-real-looking',
            'Basic abc',
            `Bearer ${UNKNOWN_TOKEN}`,
          ]) {
            const res = await h.send('/openai/v1/models', { headers: { authorization, origin: APP_ORIGIN } });
            await expectProxyError(res, 401, 'invalid_token', { authorized: false, tokenId: null });
          }
        });

        it('a bearer provider does not read x-api-key; a header provider does', async () => {
          const res = await h.send('/openai/v1/models', {
            headers: { 'x-api-key': token, origin: APP_ORIGIN },
          });
          await expectProxyError(res, 401, 'missing_token', { authorized: false, tokenId: null });
        });

        it('401 token_revoked and token_expired (at once, no waiting for an event)', async () => {
          const revoked = await h.createToken({});
          await h.apiCall('DELETE', `/v1/tokens/${revoked.tokenId}`);
          const r1 = await h.send('/openai/v1/models', { headers: bearer(revoked.token) });
          await expectProxyError(r1, 401, 'token_revoked', { authorized: false, tokenId: revoked.tokenId });

          const expiring = await h.createToken({
            expiresAt: new Date(Date.now() + clockOffset + 60_000).toISOString(),
          });
          expect((await h.send('/openai/v1/models', { headers: bearer(expiring.token) })).status).toBe(200);
          clockOffset += 61_000;
          const r2 = await h.send('/openai/v1/models', { headers: bearer(expiring.token) });
          await expectProxyError(r2, 401, 'token_expired', { authorized: false, tokenId: expiring.tokenId });
        });

        it('400 provider_mismatch when the path names another provider', async () => {
          const res = await h.send('/anthropic/v1/messages', {
            method: 'POST',
            headers: bearer(token),
            body: '{}',
          });
          await expectProxyError(res, 400, 'provider_mismatch', { authorized: false, tokenId });
          expect(res.json.error?.message).toBe(
            'This token is for provider "openai"; use /openai/… instead of /anthropic/….',
          );
        });

        it('403 origin_not_allowed: missing, null, other, suffix and substring tricks; breach reported', async () => {
          const cases: [string, Record<string, string>][] = [
            ['missing', { authorization: `Bearer ${token}` }],
            ['null', { authorization: `Bearer ${token}`, origin: 'null' }],
            ['other', bearer(token, 'https://evil.example')],
            ['suffix', bearer(token, 'https://app.example.com.evil.net')],
            ['substring', bearer(token, 'https://evilapp.example.com')],
            [
              'referer trick',
              { authorization: `Bearer ${token}`, referer: 'https://evil.example/app.example.com' },
            ],
          ];
          for (const [, headers] of cases) {
            h.unauthorized.length = 0;
            const res = await h.send('/openai/v1/models', { headers });
            await expectProxyError(res, 403, 'origin_not_allowed', { authorized: false, tokenId });
            expect(h.unauthorized).toHaveLength(1);
            expect(h.unauthorized[0]).toMatchObject({
              tokenId,
              accountId: h.accountId,
              reason: 'origin_not_allowed',
              ip: '127.0.0.1',
              path: '/openai/v1/models',
              requestId: res.headers['x-tokenproxy-request-id'],
            });
          }
          expect(
            h.mock.received.filter((r) => r.path === '/v1/models' && r.headers.origin !== undefined),
          ).toEqual([]);
        });

        it('origin_not_allowed without any Origin or Referer says so, and how to fix it', async () => {
          const none = await h.send('/openai/v1/models', { headers: { authorization: `Bearer ${token}` } });
          expect(none.json.error?.message).toBe(
            'This token may not be used from this origin: the request has no Origin or Referer header. ' +
              'Browsers send one; a server-side caller must send an Origin header with an allowed origin.',
          );
          const other = await h.send('/openai/v1/models', { headers: bearer(token, 'https://evil.example') });
          expect(other.json.error?.message).toBe('This token may not be used from this origin.');
        });

        it('a Referer from an allowed origin authorizes when Origin is absent', async () => {
          const res = await h.send('/openai/v1/models', {
            headers: { authorization: `Bearer ${token}`, referer: 'https://app.example.com/page?q=1' },
          });
          expect(res.status).toBe(200);
        });

        it('403 ip_not_allowed when authorized_ips does not hold the client; allowed when it does', async () => {
          const narrow = await h.createToken({ allowedIps: ['10.1.2.3', '2001:db8::/32'] });
          h.unauthorized.length = 0;
          const res = await h.send('/openai/v1/models', { headers: bearer(narrow.token) });
          await expectProxyError(res, 403, 'ip_not_allowed', { authorized: false, tokenId: narrow.tokenId });
          expect(h.unauthorized[0]).toMatchObject({ reason: 'ip_not_allowed', origin: APP_ORIGIN });

          // X-Forwarded-For is not believed without trust_proxy.
          const forged = await h.send('/openai/v1/models', {
            headers: { ...bearer(narrow.token), 'x-forwarded-for': '10.1.2.3' },
          });
          expect(forged.status).toBe(403);

          const wide = await h.createToken({ allowedIps: ['127.0.0.0/8'] });
          expect((await h.send('/openai/v1/models', { headers: bearer(wide.token) })).status).toBe(200);
        });

        it('502 upstream_unreachable when the provider refuses connections', async () => {
          const closed = await h.createToken({ provider: 'closed' });
          const res = await h.send('/closed/v1/models', { headers: bearer(closed.token) });
          // Not forwarded: the provider never had it (no usage, no quota; the Overview's upstream error).
          await expectProxyError(res, 502, 'upstream_unreachable', {
            authorized: true,
            tokenId: closed.tokenId,
            forwarded: false,
          });
          expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
        });

        it('504 upstream_timeout when the provider is slower than upstream_headers_timeout', async () => {
          const res = await h.send('/openai/slow?ms=3000', { headers: bearer(token) });
          await expectProxyError(res, 504, 'upstream_timeout', {
            authorized: true,
            tokenId,
            forwarded: false,
          });
        });

        it('error responses carry CORS headers for the sending origin only', async () => {
          const withOrigin = await h.send('/openai/v1/models', {
            headers: { origin: 'https://anything.example' },
          });
          expect(withOrigin.headers['access-control-allow-origin']).toBe('https://anything.example');
          expect(withOrigin.headers.vary).toBe('Origin');
          expect(withOrigin.headers['access-control-expose-headers']).toContain('x-tokenproxy-request-id');
          const without = await h.send('/openai/v1/models');
          expect(without.headers['access-control-allow-origin']).toBeUndefined();
        });

        /** The pino lines that name this request id, parsed. */
        function linesOf(requestId: unknown): Record<string, unknown>[] {
          return h.logLines
            .map((line) => JSON.parse(line) as Record<string, unknown>)
            .filter((line) => line.request_id === requestId);
        }

        it.each([
          ['closed', '/closed/v1/models', 502, 'upstream_unreachable', 'connect_refused'],
          ['untrusted', '/untrusted/v1/models', 502, 'upstream_unreachable', 'certificate_untrusted'],
          ['openai', '/openai/slow?ms=3000', 504, 'upstream_timeout', 'timeout'],
          ['resetting', '/resetting/reset', 502, 'upstream_unreachable', 'reset'],
        ])(
          'a failed upstream request (%s) writes one warn line with its cause and request id',
          async (provider, path, status, code, cause) => {
            const realKey = `sk-upstream-failure-${provider}-0000000000`;
            const t = await h.createToken({ provider, realKey });
            const res = await h.send(path, {
              headers: { ...bearer(t.token), 'x-secret-marker': 'hdr-marker-123' },
            });
            expect(res.status).toBe(status);
            expect(res.json.error?.code).toBe(code);
            const id = res.headers['x-tokenproxy-request-id'];
            await h.recordOf(id);
            const lines = linesOf(id);
            expect(lines).toHaveLength(1);
            expect(lines[0]).toEqual({
              level: 'warn',
              time: expect.any(String) as string,
              service: 'tokenproxy',
              request_id: id,
              provider,
              cause,
              error_code: expect.any(String) as string,
              status,
              msg: 'upstream request failed',
            });
            const all = h.logLines.join('\n');
            for (const secret of [realKey, t.token, 'hdr-marker-123']) expect(all).not.toContain(secret);
          },
        );

        it('a provider that breaks off mid-answer: the client response breaks too, and one warn line', async () => {
          const res = await h.send('/openai/reset-mid-stream', { headers: bearer(token) }).then(
            () => null,
            (err: unknown) => err,
          );
          expect(res).toBeInstanceOf(Error);
          const rec = await h.waitForRecord((r) => r.path === '/openai/reset-mid-stream');
          expect(rec).toMatchObject({ status: 200, forwarded: true, errorCode: null });
          const lines = linesOf(rec.requestId);
          expect(lines).toHaveLength(1);
          expect(lines[0]).toMatchObject({
            level: 'warn',
            provider: 'openai',
            cause: 'reset',
            during: 'response_body',
            msg: 'upstream request failed',
          });
        });

        it("the provider's own error answer is forwarded unchanged and recorded with error_code null", async () => {
          const res = await h.send('/openai/status/429', { headers: bearer(token) });
          expect(res.status).toBe(429);
          expect(res.json.type).toBeUndefined();
          const rec = await h.recordOf(res.headers['x-tokenproxy-request-id']);
          expect(rec).toMatchObject({ status: 429, forwarded: true, errorCode: null });
          expect(linesOf(res.headers['x-tokenproxy-request-id'])).toEqual([]);
        });

        it(`every request above reached the proxy over ${protocol}`, () => {
          expect(h.httpVersions.length).toBeGreaterThan(30);
          expect(new Set(h.httpVersions)).toEqual(new Set([protocol === 'h2' ? '2.0' : '1.1']));
        });
      },
    );
  }
}
