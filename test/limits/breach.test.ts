import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { APP_ORIGIN, bearer, startProxyHarness, type ProxyHarness } from '../proxy/harness.js';
import { countBy, EVIL_ORIGIN, pool, storedAnomalies, TRUST_LOOPBACK } from './helpers.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const UNKNOWN_TOKEN = `svc_hb_${'1'.repeat(43)}`;

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`breach actions and IP backoff (${fixture.name})`, () => {
    let h: ProxyHarness;
    let clock = Date.UTC(2026, 2, 10, 12, 0, 0);
    let token: string;
    let tokenId: string;
    let ipCounter = 0;
    /** A fresh client IP per test: backoff state is per IP. */
    const freshIp = (): string => `198.51.100.${++ipCounter}`;

    beforeAll(async () => {
      h = await startProxyHarness(fixture, {
        config: { trustProxy: TRUST_LOOPBACK },
        now: () => clock,
        limits: {},
      });
      ({ token, tokenId } = await h.createToken({ realKey: 'sk-breach-test-key-00000000000000' }));
    });
    afterAll(async () => {
      await h?.close();
    });
    beforeEach(() => {
      h.events.length = 0;
      h.unauthorized.length = 0;
    });

    const from = (ip: string, origin = EVIL_ORIGIN, tok = token) => ({
      headers: { ...bearer(tok, origin), 'x-forwarded-for': ip },
    });

    it('backoff: 403, then 429 ip_backoff with a doubling Retry-After, reset after an hour', async () => {
      const ip = freshIp();
      const first = await h.send('/openai/v1/models', from(ip));
      expect(first.status).toBe(403);
      expect(first.json.error?.code).toBe('origin_not_allowed');
      expect(first.headers['retry-after']).toBeUndefined();

      const waits: unknown[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await h.send('/openai/v1/models', from(ip));
        expect(res.status).toBe(429);
        expect(res.json.error?.code).toBe('ip_backoff');
        waits.push(res.headers['retry-after']);
      }
      expect(waits).toEqual(['2', '4', '8', '16']);

      // Once the wait is over the next attempt is judged normally (403) and deepens the wait again.
      clock += 16_000;
      expect((await h.send('/openai/v1/models', from(ip))).status).toBe(403);
      expect((await h.send('/openai/v1/models', from(ip))).headers['retry-after']).toBe('64');

      // An hour without attempts: forgotten, back to 1 s.
      clock += 60 * 60_000;
      expect((await h.send('/openai/v1/models', from(ip))).status).toBe(403);
      const again = await h.send('/openai/v1/models', from(ip));
      expect([again.status, again.headers['retry-after']]).toEqual([429, '2']);

      const rec = await h.recordOf(again.headers['x-tokenproxy-request-id']);
      expect(rec).toMatchObject({ status: 429, authorized: false, tokenId, forwarded: false });
      clock += 2 * 60 * 60_000;
    });

    it('IPv6 backoff is per /64: another address of the /64 is still in backoff, IPv4 per address', async () => {
      expect((await h.send('/openai/v1/models', from('2001:db8:77:1::1'))).status).toBe(403);
      const hop = await h.send('/openai/v1/models', from('2001:db8:77:1:abcd::99'));
      expect([hop.status, hop.json.error?.code, hop.headers['retry-after']]).toEqual([
        429,
        'ip_backoff',
        '2',
      ]);
      // The neighbouring /64 is another client.
      expect((await h.send('/openai/v1/models', from('2001:db8:77:2::1'))).status).toBe(403);
      // IPv4 stays per address; an IPv4-mapped spelling is the same IPv4 client.
      const v4 = freshIp();
      expect((await h.send('/openai/v1/models', from(v4))).status).toBe(403);
      expect((await h.send('/openai/v1/models', from(`::ffff:${v4}`))).json.error?.code).toBe('ip_backoff');
      expect((await h.send('/openai/v1/models', from(freshIp()))).status).toBe(403);
      clock += 2 * 60 * 60_000;
    });

    it('authorized requests from a backed-off IP still succeed', async () => {
      const ip = freshIp();
      expect((await h.send('/openai/v1/models', from(ip))).status).toBe(403);
      expect((await h.send('/openai/v1/models', from(ip))).status).toBe(429);
      for (let i = 0; i < 3; i++) {
        const ok = await h.send('/openai/v1/models', from(ip, APP_ORIGIN));
        expect(ok.status).toBe(200);
      }
      expect((await h.send('/openai/v1/models', from(ip))).json.error?.code).toBe('ip_backoff');
    });

    it('token guessing (401) counts toward the backoff, raises no alert and no anomaly entry', async () => {
      const ip = freshIp();
      const guess = { headers: { authorization: `Bearer ${UNKNOWN_TOKEN}`, 'x-forwarded-for': ip } };
      expect((await h.send('/openai/v1/models', guess)).json.error?.code).toBe('invalid_token');
      const blocked = await h.send('/openai/v1/models', guess);
      expect([blocked.status, blocked.json.error?.code, blocked.headers['retry-after']]).toEqual([
        429,
        'ip_backoff',
        '2',
      ]);
      const none = { headers: { 'x-forwarded-for': ip } };
      expect((await h.send('/openai/v1/models', none)).json.error?.code).toBe('ip_backoff');
      // A real, authorized token from that IP is not affected.
      expect((await h.send('/openai/v1/models', from(ip, APP_ORIGIN))).status).toBe(200);
      expect(h.events).toEqual([]);
      expect(h.unauthorized).toEqual([]);
    });

    it('an Origin that is not an origin is logged as sent, and a long one is cut', async () => {
      // A token of its own: its alerts must not use up the caps the other tests count on.
      const own = await h.createToken({ realKey: 'sk-breach-origin-key-000000000000' });
      const ips: string[] = [];
      const long = `https://${'a'.repeat(8000)}.example`;
      for (const origin of ['javascript:alert(1)', long]) {
        ips.push(freshIp());
        const res = await h.send('/openai/v1/models', from(ips.at(-1) as string, origin, own.token));
        expect(res.status).toBe(403);
        await h.recordOf(res.headers['x-tokenproxy-request-id']);
      }
      const logged = (await storedAnomalies(h, h.db.store, own.tokenId)).filter((a) => ips.includes(a.ip));
      expect(logged).toHaveLength(2);
      expect(logged.map((a) => a.origin?.slice(0, 19))).toEqual(
        expect.arrayContaining(['javascript:alert(1)', 'https://aaaaaaaaaaa']),
      );
      // A refusal's entry keeps 256 bytes of it, like its record.
      for (const entry of logged) expect(Buffer.byteLength(entry.origin ?? '')).toBeLessThanOrEqual(256);
    });

    it('breach.detected carries the attempt; ip_backoff refusals are logged, counted, never alerted', async () => {
      const ip = freshIp();
      await h.send('/openai/v1/chat/completions?x=1', { ...from(ip), method: 'POST', body: '{}' });
      expect(h.events).toEqual([
        {
          accountId: h.accountId,
          type: 'breach.detected',
          data: {
            token_id: tokenId,
            origin: EVIL_ORIGIN,
            ip,
            country: null,
            path: '/openai/v1/chat/completions',
            reason: 'origin_not_allowed',
            attempts: 1,
            // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- an asymmetric matcher
            last_seen: expect.stringMatching(ISO_MS),
          },
        },
      ]);
      for (let i = 0; i < 5; i++) expect((await h.send('/openai/v1/models', from(ip))).status).toBe(429);
      expect(h.events).toHaveLength(1);
      expect(h.unauthorized.map((a) => a.reason)).toEqual([
        'origin_not_allowed',
        ...Array<string>(5).fill('ip_backoff'),
      ]);

      // The trailing alert after the minute covers the 5 attempts since.
      const mine = () => h.events.filter((e) => e.data.ip === ip);
      await h.limits?.breach.flush(clock + 59_000);
      expect(mine()).toHaveLength(1);
      await h.limits?.breach.flush(clock + 60_000);
      expect(mine()).toHaveLength(2);
      // Those 5 were refused while the IP backed off; the alert says why the first one was.
      expect(mine()[1]?.data).toMatchObject({
        attempts: 5,
        ip,
        token_id: tokenId,
        reason: 'origin_not_allowed',
      });

      const logged = (await storedAnomalies(h, h.db.store, tokenId)).filter((a) => a.ip === ip);
      expect(countBy(logged, (a) => a.reason)).toEqual({ origin_not_allowed: 1, ip_backoff: 5 });
      clock += 2 * 60 * 60_000;
    });

    it('provider_mismatch: logged and counted toward backoff; alerted only from a foreign origin', async () => {
      const wrongPath = (ip: string, origin?: string) => ({
        ...from(ip, origin),
        method: 'POST' as const,
        body: '{}',
      });
      // From the token's own origin: most likely its owner's bug. Logged and counted, no alert.
      const ip = freshIp();
      const own = await h.send('/anthropic/v1/messages', wrongPath(ip, APP_ORIGIN));
      expect(own.status).toBe(400);
      expect(own.json.error?.code).toBe('provider_mismatch');
      expect(h.unauthorized.map((a) => a.reason)).toEqual(['provider_mismatch']);
      expect(h.events).toEqual([]);
      const again = await h.send('/anthropic/v1/messages', wrongPath(ip, APP_ORIGIN));
      expect(again.status).toBe(429);
      expect(again.json.error?.code).toBe('ip_backoff');
      expect(h.events).toEqual([]);

      // From an origin the token does not allow either: a breach alert.
      const ip2 = freshIp();
      const foreign = await h.send('/anthropic/v1/messages', wrongPath(ip2));
      expect(foreign.status).toBe(400);
      expect(h.events).toEqual([
        {
          accountId: h.accountId,
          type: 'breach.detected',
          data: {
            token_id: tokenId,
            origin: EVIL_ORIGIN,
            ip: ip2,
            country: null,
            path: '/anthropic/v1/messages',
            reason: 'provider_mismatch',
            attempts: 1,
            // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- an asymmetric matcher
            last_seen: expect.stringMatching(ISO_MS),
          },
        },
      ]);
      const logged = (await storedAnomalies(h, h.db.store, tokenId)).filter(
        (a) => a.ip === ip || a.ip === ip2,
      );
      expect(countBy(logged, (a) => `${a.ip === ip ? 'own' : 'foreign'} ${a.reason}`)).toEqual({
        'own provider_mismatch': 1,
        'own ip_backoff': 1,
        'foreign provider_mismatch': 1,
      });
      clock += 2 * 60 * 60_000;
    });

    it('ip_not_allowed is a breach too, coalesced per (token, origin, ip)', async () => {
      const { token: pinned } = await h.createToken({ allowedIps: ['203.0.113.7'] });
      const ip = freshIp();
      const res = await h.send('/openai/v1/models', from(ip, APP_ORIGIN, pinned));
      expect(res.json.error?.code).toBe('ip_not_allowed');
      expect(h.events.map((e) => e.data.reason)).toEqual(['ip_not_allowed']);
      // After its backoff wait, a second 403 within the minute is coalesced...
      clock += 1_000;
      expect((await h.send('/openai/v1/models', from(ip, APP_ORIGIN, pinned))).status).toBe(403);
      expect(h.events).toHaveLength(1);
      // ...and the first 403 after the minute alerts again with both attempts.
      clock += 60_000;
      expect((await h.send('/openai/v1/models', from(ip, APP_ORIGIN, pinned))).status).toBe(403);
      expect(h.events.map((e) => e.data.attempts)).toEqual([1, 2]);
      clock += 2 * 60 * 60_000;
    });

    it('IPv6 attempts from one /64 are coalesced as one address', async () => {
      const { token: own } = await h.createToken({});
      expect((await h.send('/openai/v1/models', from('2001:db8:99:1::1', EVIL_ORIGIN, own))).status).toBe(
        403,
      );
      clock += 1_000;
      expect((await h.send('/openai/v1/models', from('2001:db8:99:1::2', EVIL_ORIGIN, own))).status).toBe(
        403,
      );
      expect(h.events.map((e) => [e.data.ip, e.data.attempts])).toEqual([['2001:db8:99:1::1', 1]]);
      clock += 2 * 60 * 60_000;
    });

    it('rotating client addresses: 3 alerts per token a minute, the rest in one summary', async () => {
      const { token: own, tokenId: ownId } = await h.createToken({});
      for (let i = 1; i <= 60; i++) {
        const res = await h.send(
          '/openai/v1/models',
          from(`192.0.2.${i}`, `https://evil${i % 3}.example.net`, own),
        );
        expect(res.status).toBe(403);
      }
      const mine = () => h.events.filter((e) => e.data.token_id === ownId);
      expect(mine().map((e) => e.data.ip)).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3']);
      // The per-tuple rule still holds inside the cap: the summary is sent when the minute is over.
      await h.limits?.breach.flush(clock + 59_000);
      expect(mine()).toHaveLength(3);
      await h.limits?.breach.flush(clock + 60_000);
      expect(mine()).toHaveLength(4);
      const summary = mine()[3];
      expect(summary?.accountId).toBe(h.accountId);
      expect(summary?.data).toMatchObject({
        token_id: ownId,
        summary: true,
        attempts: 57,
        reasons: { origin_not_allowed: 57 },
        origin_count: 3,
        ip_count: 57,
        counts_capped: false,
      });
      expect(summary?.data.ips).toEqual(Array.from({ length: 10 }, (_, i) => `192.0.2.${i + 4}`));
      expect([...(summary?.data.origins as string[])].sort()).toEqual(
        [0, 1, 2].map((n) => `https://evil${n}.example.net`),
      );
      // Sent once: the next flush has nothing left.
      await h.limits?.breach.flush(clock + 120_000);
      expect(mine()).toHaveLength(4);
      clock += 2 * 60 * 60_000;
    });

    it('10 alerts per account a minute across tokens; every token held back gets its summary', async () => {
      const tokens: { token: string; tokenId: string }[] = [];
      for (let t = 0; t < 4; t++) tokens.push(await h.createToken({}));
      let n = 0;
      for (const t of tokens)
        for (let i = 0; i < 5; i++)
          expect(
            (await h.send('/openai/v1/models', from(`198.18.0.${++n}`, EVIL_ORIGIN, t.token))).status,
          ).toBe(403);
      expect(h.events).toHaveLength(10);
      expect(h.events.map((e) => tokens.findIndex((t) => t.tokenId === e.data.token_id))).toEqual([
        0, 0, 0, 1, 1, 1, 2, 2, 2, 3,
      ]);
      await h.limits?.breach.flush(clock + 60_000);
      const summaries = h.events.filter((e) => e.data.summary === true);
      expect(summaries.map((e) => [e.data.token_id, e.data.summary, e.data.attempts])).toEqual(
        tokens.map((t, i) => [t.tokenId, true, i === 3 ? 4 : 2]),
      );
      clock += 2 * 60 * 60_000;
    });

    it('a flood of distinct origins from a backed-off IP cannot evict a pending trailing alert', async () => {
      const { token: own, tokenId: ownId } = await h.createToken({});
      const ip = freshIp();
      expect((await h.send('/openai/v1/models', from(ip, EVIL_ORIGIN, own))).status).toBe(403);
      for (let i = 0; i < 100; i++)
        expect((await h.send('/openai/v1/models', from(ip, EVIL_ORIGIN, own))).status).toBe(429);
      const statuses = await pool(
        10_000,
        64,
        async (i) => (await h.send('/openai/v1/models', from(ip, `https://o${i}.example.org`, own))).status,
      );
      expect(countBy(statuses, String)).toEqual({ '429': 10_000 });
      expect(h.events).toHaveLength(1);
      await h.limits?.breach.flush(clock + 60_000);
      const mine = h.events.filter((e) => e.data.token_id === ownId);
      // The "100 more attempts" alert of the first origin survived the flood...
      expect(mine.filter((e) => e.data.origin === EVIL_ORIGIN).map((e) => e.data.attempts)).toEqual([1, 100]);
      // ...and what the table could not hold arrived as the token's summary.
      const summary = mine.find((e) => e.data.summary === true);
      expect(summary?.data).toMatchObject({ reasons: { ip_backoff: summary?.data.attempts } });
      expect(summary?.data.attempts).toBeGreaterThan(0);
      expect(summary?.data.ips).toEqual([ip]);
      clock += 2 * 60 * 60_000;
    }, 120_000);

    it('a flood of 10,000 unauthorized requests: bounded alerts, every attempt in the anomaly log', async () => {
      const ip = freshIp();
      const started = Date.now();
      const statuses = await pool(
        10_000,
        64,
        async () => (await h.send('/openai/v1/models', from(ip))).status,
      );
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(countBy(statuses, String)).toEqual({ '403': 1, '429': 9_999 });
      expect(h.events).toHaveLength(1);
      await h.limits?.breach.flush(clock + 60_000);
      expect(h.events.filter((e) => e.data.ip === ip).map((e) => e.data.attempts)).toEqual([1, 9_999]);
      expect(h.unauthorized).toHaveLength(10_000);
      const logged = (await storedAnomalies(h, h.db.store, tokenId)).filter((a) => a.ip === ip);
      expect(logged).toHaveLength(10_000);
      expect(new Set(logged.map((a) => a.id)).size).toBe(10_000);
    }, 120_000);
  });
}
