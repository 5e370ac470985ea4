import { readFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { connect } from 'node:tls';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { databases } from '../support/databases.js';
import { APP_ORIGIN, bearer, startProxyHarness, type ProxyHarness } from './harness.js';
import { startScriptedUpstream, type ScriptedUpstream } from './upstream-fixture.js';
import { filesUnder } from '../support/files.js';

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

const REAL_KEY = 'sk-DISTINCTIVE-REAL-KEY-Zq8vW3xY7uT1pR5nM2kJ9hG4';
const ANTHROPIC_KEY = 'sk-ant-DISTINCTIVE-ANTHROPIC-KEY-Lk3Jh8Gf2Ds5Aa9';
const BODY_MARKER = 'BODY-MARKER-5d1e2f3a4b5c6d7e8f90';

/** Writes a raw HTTP/1.1 request on a TLS socket and returns everything the proxy answers. */
function rawRequest(port: number, ca: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
      socket.write(text);
    });
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (out += d));
    socket.on('end', () => resolve(out));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
  });
}

function allZero(buf: Buffer): boolean {
  return buf.every((b) => b === 0);
}

describe('proxy security: key swap, SSRF, redaction, CORS, aborts, secrets', () => {
  let h: ProxyHarness;
  let scripted: ScriptedUpstream;
  let evil: Server;
  let evilConnections = 0;
  let evilPort: number;
  let token: string;
  let anthropicToken: string;
  let scriptedToken: string;
  const responses: string[] = [];

  beforeAll(async () => {
    evil = createServer((socket) => {
      evilConnections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    evilPort = (evil.address() as AddressInfo).port;
    scripted = await startScriptedUpstream();
    h = await startProxyHarness(sqlite, {
      extraCaPem: scripted.caCertPem,
      providers: () => [{ id: 'scripted', baseUrl: scripted.url, auth: { kind: 'bearer' }, builtin: false }],
    });
    ({ token } = await h.createToken({ realKey: REAL_KEY }));
    ({ token: anthropicToken } = await h.createToken({ provider: 'anthropic', realKey: ANTHROPIC_KEY }));
    ({ token: scriptedToken } = await h.createToken({ provider: 'scripted', realKey: REAL_KEY }));
  });
  afterAll(async () => {
    await h.close();
    await scripted.close();
    await new Promise<void>((resolve) => evil.close(() => resolve()));
  });

  describe('the upstream host is fixed by the provider', () => {
    const evilHost = (): string => `127.0.0.1:${evilPort}`;

    it('absolute-form targets, //host paths, forged Host and X-Forwarded-Host all go to the provider', async () => {
      h.mock.reset();
      const head = (target: string, extra = ''): string =>
        `GET ${target} HTTP/1.1\r\nHost: ${evilHost()}\r\nX-Forwarded-Host: ${evilHost()}\r\n` +
        `X-Forwarded-Proto: http\r\nForwarded: host=${evilHost()}\r\nAuthorization: Bearer ${token}\r\n` +
        `Origin: ${APP_ORIGIN}\r\n${extra}Connection: close\r\n\r\n`;
      const answers = [
        await rawRequest(h.port, h.ca, head(`https://${evilHost()}/openai/v1/models`)),
        await rawRequest(h.port, h.ca, head(`/openai//${evilHost()}/v1/models`)),
        await rawRequest(h.port, h.ca, head('/openai/v1/models')),
        await rawRequest(h.port, h.ca, head(`//${evilHost()}/openai/v1/models`)),
      ];
      expect(answers.map((a) => a.slice(0, 12))).toEqual([
        'HTTP/1.1 200',
        'HTTP/1.1 200',
        'HTTP/1.1 200',
        'HTTP/1.1 404',
      ]);
      const received = await h.mock.waitForRequests(3);
      expect(received.map((r) => r.path)).toEqual(['/v1/models', `//${evilHost()}/v1/models`, '/v1/models']);
      for (const r of received) {
        expect(r.headers.host).toBe(`127.0.0.1:${h.mock.port}`);
        expect(r.headers['x-forwarded-host']).toBeUndefined();
        expect(r.headers['x-forwarded-proto']).toBeUndefined();
        expect(r.headers.forwarded).toBeUndefined();
      }
      expect(evilConnections).toBe(0);
    });
  });

  describe('key swap', () => {
    it('strips every caller credential, hop-by-hop and client-address header', async () => {
      h.mock.reset();
      const answer = await rawRequest(
        h.port,
        h.ca,
        'POST /openai/echo-body HTTP/1.1\r\nHost: localhost\r\n' +
          `Authorization: Bearer ${token}\r\nOrigin: ${APP_ORIGIN}\r\nReferer: ${APP_ORIGIN}/page\r\n` +
          'X-Api-Key: caller-x-api-key\r\nX-Goog-Api-Key: caller-goog\r\nApi-Key: caller-azure\r\n' +
          'Proxy-Authorization: Basic Zm9vOmJhcg==\r\nCookie: session=caller-cookie\r\n' +
          'X-Forwarded-For: 203.0.113.9\r\nX-Real-IP: 203.0.113.9\r\nKeep-Alive: timeout=5\r\n' +
          'TE: trailers\r\nX-Hop: secret-hop\r\nX-Kept: kept\r\nX-Stainless-Lang: js\r\n' +
          'Accept-Encoding: gzip, br\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n' +
          'Connection: close, X-Hop\r\n\r\nhello',
      );
      expect(answer.startsWith('HTTP/1.1 200')).toBe(true);
      expect(answer).toContain('\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
      const [r] = await h.mock.waitForRequests(1);
      const names = (r?.rawHeaders ?? []).filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
      for (const gone of [
        'x-api-key',
        'x-goog-api-key',
        'api-key',
        'proxy-authorization',
        'cookie',
        'origin',
        'referer',
        'x-forwarded-for',
        'x-real-ip',
        'keep-alive',
        'te',
        'x-hop',
      ]) {
        expect(names).not.toContain(gone);
      }
      expect(r?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
      expect(names.filter((n) => n === 'authorization')).toHaveLength(1);
      expect(r?.headers['x-kept']).toBe('kept');
      expect(r?.headers['x-stainless-lang']).toBe('js');
      expect(r?.headers['accept-encoding']).toBe('identity');
      expect(r?.headers['content-length']).toBe('5');
      expect(r?.body.toString()).toBe('hello');
    });

    it('oversized headers are refused with 431', async () => {
      const res = await request(`${h.url}/openai/v1/models`, {
        dispatcher: h.dispatcher,
        headers: { ...bearer(token), 'x-big': 'a'.repeat(17 * 1024) },
      });
      await res.body.dump();
      expect(res.statusCode).toBe(431);
    });
  });

  describe('responses', () => {
    it('adds x-tokenproxy-request-id without clobbering the provider x-request-id; CORS headers', async () => {
      const res = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect(res.status).toBe(200);
      expect(res.headers['x-request-id']).toBe('req_mock');
      expect(res.headers['x-tokenproxy-request-id']).toMatch(/^req_/);
      expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
      expect(res.headers.vary).toContain('Origin');
      const exposed = String(res.headers['access-control-expose-headers']).toLowerCase();
      for (const name of [
        'ratelimit-limit',
        'ratelimit-remaining',
        'ratelimit-reset',
        'retry-after',
        'x-tokenproxy-request-id',
        'x-request-id',
      ]) {
        expect(exposed.split(', ')).toContain(name);
      }
      expect(res.headers['x-ratelimit-remaining-requests']).toBe('9999');
    });

    it('answers CORS preflights itself', async () => {
      h.mock.reset();
      const res = await h.send('/anthropic/v1/messages', {
        method: 'OPTIONS',
        headers: {
          origin: APP_ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers':
            'authorization, content-type, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, x-stainless-os',
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
      expect(res.headers['access-control-allow-methods']).toContain('POST');
      const allowed = String(res.headers['access-control-allow-headers']);
      for (const name of [
        'authorization',
        'content-type',
        'x-api-key',
        'anthropic-version',
        'anthropic-dangerous-direct-browser-access',
        'x-stainless-os',
      ]) {
        expect(allowed).toContain(name);
      }
      expect(Number(res.headers['access-control-max-age'])).toBeGreaterThan(0);
      expect(res.headers.vary).toContain('Origin');

      const bare = await h.send('/openai/v1/chat/completions', {
        method: 'OPTIONS',
        headers: { origin: APP_ORIGIN, 'access-control-request-method': 'POST' },
      });
      expect(bare.status).toBe(204);
      expect(String(bare.headers['access-control-allow-headers'])).toContain('x-stainless-');
      expect(h.mock.received).toHaveLength(0);
    });

    it('redacts the real key echoed in headers and body', async () => {
      const res = await h.send('/openai/echo-auth', { headers: bearer(token) });
      responses.push(res.text, JSON.stringify(res.headers));
      expect(res.status).toBe(200);
      expect(res.headers['x-echo-authorization']).toBe('Bearer [REDACTED]');
      expect(res.json.authorization).toBe('Bearer [REDACTED]');
      expect(res.text).not.toContain(REAL_KEY);

      const anth = await h.send('/anthropic/echo-auth', {
        headers: { 'x-api-key': anthropicToken, origin: APP_ORIGIN },
      });
      responses.push(anth.text, JSON.stringify(anth.headers));
      expect(anth.headers['x-echo-x-api-key']).toBe('[REDACTED]');
      expect(anth.json['x-api-key']).toBe('[REDACTED]');
    });

    it('redacts a key split across streamed chunks without holding back what precedes it', async () => {
      for (const at of [1, 7, REAL_KEY.length - 1]) {
        const started = Date.now();
        const res = await request(`${h.url}/scripted/split?at=${at}`, {
          dispatcher: h.dispatcher,
          headers: bearer(scriptedToken),
        });
        const pieces: { at: number; text: string }[] = [];
        for await (const chunk of res.body) {
          pieces.push({ at: Date.now() - started, text: (chunk as Buffer).toString() });
        }
        const text = pieces.map((p) => p.text).join('');
        responses.push(text);
        expect(text).toBe('data: first [REDACTED] last\n\n');
        // "data: first " went out before the rest of the key existed upstream.
        expect(pieces[0]?.text).toBe('data: first ');
        expect((pieces.at(-1)?.at ?? 0) - (pieces[0]?.at ?? 0)).toBeGreaterThanOrEqual(100);
      }
    });

    it('a provider reset mid-stream ends the client response with an error, not a hang', async () => {
      const res = await request(`${h.url}/openai/reset-mid-stream`, {
        dispatcher: h.dispatcher,
        headers: bearer(token),
      });
      expect(res.statusCode).toBe(200);
      await expect(res.body.text()).rejects.toThrow();
      const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
      expect(record).toMatchObject({ status: 200, forwarded: true, authorized: true });
    });
  });

  describe('the decrypted key Buffer is zeroed on every path', () => {
    it('after a success', async () => {
      const res = await h.send('/openai/v1/models', { headers: bearer(token) });
      expect(res.status).toBe(200);
      const buf = h.decrypted.at(-1) as Buffer;
      expect(buf.length).toBeGreaterThan(0);
      await vi.waitFor(() => expect(allZero(buf)).toBe(true));
    });

    it('after an upstream error', async () => {
      const res = await h.send('/openai/status/500', { headers: bearer(token) });
      expect(res.status).toBe(500);
      const buf = h.decrypted.at(-1) as Buffer;
      await vi.waitFor(() => expect(allZero(buf)).toBe(true));
    });

    it('after a client abort, which also aborts the upstream request', async () => {
      const before = h.decrypted.length;
      const controller = new AbortController();
      const pending = request(`${h.url}/scripted/hang`, {
        dispatcher: h.dispatcher,
        headers: bearer(scriptedToken),
        signal: controller.signal,
      });
      await scripted.hangStarted;
      expect(h.decrypted.length).toBe(before + 1);
      const buf = h.decrypted.at(-1) as Buffer;
      expect(allZero(buf)).toBe(false);
      controller.abort();
      await expect(pending).rejects.toThrow();
      await scripted.hangClosed();
      await vi.waitFor(() => expect(allZero(buf)).toBe(true));
      const record = await h.waitForRecord((r) => r.path === '/scripted/hang');
      expect(record).toMatchObject({ status: 499, forwarded: true, authorized: true });
    });

    it('when the client left while its key was being decrypted (never forwarded)', async () => {
      const before = h.decrypted.length;
      const release = h.holdDecrypts();
      const controller = new AbortController();
      const pending = request(`${h.url}/openai/v1/models?held`, {
        dispatcher: h.dispatcher,
        headers: bearer(token),
        signal: controller.signal,
      });
      try {
        await vi.waitFor(() => expect(h.decrypted.length).toBe(before + 1));
        controller.abort();
        await expect(pending).rejects.toThrow();
        const record = await h.waitForRecord((r) => r.status === 499 && !r.forwarded);
        expect(record).toMatchObject({ authorized: true });
      } finally {
        release();
      }
      const buf = h.decrypted.at(-1) as Buffer;
      await vi.waitFor(() => expect(allZero(buf)).toBe(true));
    });
  });

  it('secrets appear in no record, log line, response or data file', async () => {
    const res = await h.send('/openai/echo-body', {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ note: BODY_MARKER }),
    });
    expect(res.text).toContain(BODY_MARKER); // the provider's answer itself is passed through
    await h.send('/openai/v1/models', { headers: bearer(token, 'https://evil.example') });
    await h.send('/openai/status/500', { headers: bearer(token) });

    const everything = [
      JSON.stringify(h.records),
      JSON.stringify(h.unauthorized),
      h.logLines.join('\n'),
      ...responses,
    ].join('\n');
    expect(everything).not.toContain(REAL_KEY);
    expect(everything).not.toContain(ANTHROPIC_KEY);
    expect(JSON.stringify(h.records)).not.toContain(BODY_MARKER);
    expect(h.logLines.join('\n')).not.toContain(BODY_MARKER);
    expect(everything).not.toContain(token);

    for (const file of await filesUnder(h.db.dataDir)) {
      const content = await readFile(file);
      for (const secret of [REAL_KEY, ANTHROPIC_KEY, BODY_MARKER, token]) {
        expect(content.includes(Buffer.from(secret)), `${secret.slice(0, 8)}… in ${file}`).toBe(false);
      }
    }
  });
});
