import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { APP_ORIGIN, startProxyHarness, type ProxyHarness } from './harness.js';

interface RawAnswer {
  readonly status: number;
  readonly requestId: string;
  readonly body: string;
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`encoded path tricks and path headers (${fixture.name})`, () => {
    let h: ProxyHarness;
    let token: string;

    beforeAll(async () => {
      h = await startProxyHarness(fixture);
      ({ token } = await h.createToken({}));
    });
    afterAll(async () => {
      await h?.close();
    });
    beforeEach(() => h.mock.reset());

    /** Sends `path` byte for byte: fetch-style clients would normalise dot segments before sending. */
    function rawGet(path: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
      return new Promise((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            servername: 'localhost',
            port: h.port,
            path,
            method: 'GET',
            ca: h.ca,
            agent: false,
            headers: { authorization: `Bearer ${token}`, origin: APP_ORIGIN, ...headers },
          },
          (res) => {
            const pieces: Buffer[] = [];
            res.on('data', (piece: Buffer) => pieces.push(piece));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                requestId: String(res.headers['x-tokenproxy-request-id']),
                body: Buffer.concat(pieces).toString(),
              }),
            );
          },
        );
        req.on('error', reject);
        req.end();
      });
    }

    it.each([
      '/openai/../admin',
      '/openai/v1/%2e%2e/%2e%2e/admin',
      '/openai/v1/%252e%252e/admin',
      '/openai/v1/..%2fadmin',
      '/openai/v1/..;/admin',
      '/openai/v1/%5c..%5cadmin',
      '/openai/v1\\..\\admin',
      '/openai/v1/./models',
    ])('refuses %j with 400 invalid_path; the provider never sees it', async (path) => {
      const res = await rawGet(path);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ type: 'error', error: { code: 'invalid_path' } });
      const rec = await h.recordOf(res.requestId);
      expect(rec).toMatchObject({ status: 400, errorCode: 'invalid_path', forwarded: false });
      expect(h.mock.received).toEqual([]);
    });

    it('forwards an ordinary path with dots and encoded characters unchanged', async () => {
      const res = await rawGet('/openai/v1/models?x=/../&y=%2e%2e');
      expect(res.status).toBe(200);
      const [got] = await h.mock.waitForRequests(1);
      expect(got?.path).toBe('/v1/models?x=/../&y=%2e%2e');
    });

    it('records at most 2,048 bytes of a long path, cut and marked', async () => {
      const path = `/openai/v1/${'p'.repeat(8000)}`;
      const res = await rawGet(path);
      expect(res.status).toBe(404);
      const rec = await h.recordOf(res.requestId);
      expect(Buffer.byteLength(rec.path)).toBeLessThanOrEqual(2048);
      expect(rec.path.endsWith('…[cut]')).toBe(true);
      expect(path.startsWith(rec.path.slice(0, -'…[cut]'.length))).toBe(true);
      // The provider got the whole path: only the record is cut.
      const [got] = await h.mock.waitForRequests(1);
      expect(got?.path).toBe(path.slice('/openai'.length));
    });

    it('records at most 256 bytes of path and Origin of a refused request, in its anomaly entry too', async () => {
      const path = `/openai/v1/${'p'.repeat(2100)}`;
      const origin = `https://evil.example/${'o'.repeat(2100)}`;
      const res = await rawGet(path, { origin });
      expect(res.status).toBe(403);
      const rec = await h.recordOf(res.requestId);
      expect(rec).toMatchObject({ forwarded: false, errorCode: 'origin_not_allowed' });
      const attempt = h.unauthorized.find((a) => a.requestId === res.requestId);
      for (const [kept, sent] of [
        [rec.path, path],
        [rec.origin ?? '', origin],
        [attempt?.path ?? '', path],
        [attempt?.origin ?? '', origin],
      ] as const) {
        expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(256);
        expect(Buffer.byteLength(kept)).toBeGreaterThan(240);
        expect(kept.endsWith('…[cut]')).toBe(true);
        expect(sent.startsWith(kept.slice(0, -'…[cut]'.length))).toBe(true);
      }
      expect(h.mock.received).toEqual([]);
    });

    it('strips X-Original-URL and X-Rewrite-URL, which some servers take as the real path', async () => {
      const res = await rawGet('/openai/v1/models', {
        'X-Original-URL': '/admin',
        'x-rewrite-url': '/admin?x=1',
      });
      expect(res.status).toBe(200);
      const [got] = await h.mock.waitForRequests(1);
      const names = (got?.rawHeaders ?? []).filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
      expect(names).not.toContain('x-original-url');
      expect(names).not.toContain('x-rewrite-url');
      expect(names).toContain('authorization');
    });
  });
}
