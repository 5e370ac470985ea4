import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerEncoding } from '../../src/proxy/answer-encoding.js';
import { databases } from '../support/databases.js';
import { compressedEchoText, MOCK_COMPRESSIONS } from '../support/mock-provider.js';
import { bearer, PROTOCOLS, startProxyHarness, type ProxyHarness } from './harness.js';

/**
 * A provider that compresses its answer although tokenproxy asked for `identity`: the answer is
 * decoded and relayed uncompressed, so an echoed key is redacted in it like in any other.
 */
const REAL_KEY = 'sk-proj-compressed-Ab+c/d_e-0123456789';
const sqlite = databases[0] as (typeof databases)[number];

describe('answerEncoding', () => {
  it.each([
    [undefined, { kind: 'identity' }],
    ['', { kind: 'identity' }],
    ['identity', { kind: 'identity' }],
    ['gzip', { kind: 'decoded', names: ['gzip'] }],
    ['X-GZIP', { kind: 'decoded', names: ['gzip'] }],
    [' deflate ', { kind: 'decoded', names: ['deflate'] }],
    ['br', { kind: 'decoded', names: ['br'] }],
    ['zstd', { kind: 'decoded', names: ['zstd'] }],
    ['identity, gzip', { kind: 'decoded', names: ['gzip'] }],
    [['gzip'], { kind: 'decoded', names: ['gzip'] }],
    // A chain, in the order applied (decoded last to first).
    ['gzip, br', { kind: 'decoded', names: ['gzip', 'br'] }],
    [['gzip', 'gzip'], { kind: 'decoded', names: ['gzip', 'gzip'] }],
    ['gzip, gzip, gzip, gzip, gzip', { kind: 'undecodable', name: 'gzip, gzip, gzip, gzip, gzip' }],
    ['compress', { kind: 'undecodable', name: 'compress' }],
    ['gzip, x-custom', { kind: 'undecodable', name: 'gzip, x-custom' }],
    ['x-custom', { kind: 'undecodable', name: 'x-custom' }],
    // Names of the lookup object's prototype are not encodings either.
    ['constructor', { kind: 'undecodable', name: 'constructor' }],
    ['__proto__', { kind: 'undecodable', name: '__proto__' }],
    ['toString', { kind: 'undecodable', name: 'tostring' }],
  ])('%j is %j', (header, expected) => {
    expect(answerEncoding(header)).toEqual(expected);
  });
});

for (const protocol of PROTOCOLS) {
  describe(`a compressed answer from the provider (${protocol})`, () => {
    let h: ProxyHarness;
    let token: string;

    beforeAll(async () => {
      h = await startProxyHarness(sqlite, { protocol });
      ({ token } = await h.createToken({ realKey: REAL_KEY }));
    });
    afterAll(async () => {
      await h?.close();
    });

    const redacted = (repeat: number) => compressedEchoText('[REDACTED]', repeat);

    for (const enc of Object.keys(MOCK_COMPRESSIONS)) {
      it(`${enc}: relayed decoded, without content-encoding, the key redacted`, async () => {
        const res = await h.send(`/openai/echo-key-compressed?enc=${enc}`, { headers: bearer(token) });
        expect(res.status).toBe(401);
        expect(res.headers['content-encoding']).toBeUndefined();
        expect(res.text).toBe(redacted(1));
        expect(res.text).not.toContain(REAL_KEY);
        const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
        expect(record.status).toBe(401);
      });
    }

    it('a long compressed answer arrives whole, every echo redacted', async () => {
      const res = await h.send('/openai/echo-key-compressed?enc=gzip&repeat=20000', {
        headers: bearer(token),
      });
      expect(res.status).toBe(401);
      expect(res.text.length).toBe(redacted(20000).length);
      expect(res.text).toBe(redacted(20000));
    });

    it('an answer that does not decode ends broken, with a log line and no key anywhere', async () => {
      const lines = h.logLines.length;
      const outcome = await h
        .send('/openai/echo-key-compressed?enc=broken', { headers: bearer(token) })
        .then((res) => `answered ${res.status}: ${res.text}`)
        .catch((err: unknown) => err);
      // Headers were already sent: the answer is cut off, as when a provider breaks off mid-answer.
      expect(outcome).toBeInstanceOf(Error);
      const logged = h.logLines.slice(lines).join('\n');
      expect(logged).toContain('Z_DATA_ERROR');
      expect(logged).not.toContain(REAL_KEY);
      // The proxy serves on.
      const next = await h.send('/openai/echo-key-compressed?enc=br', { headers: bearer(token) });
      expect(next.text).toBe(redacted(1));
    });

    for (const chain of ['gzip,gzip', 'gzip,br', 'zstd,deflate,gzip']) {
      it(`a chain of codings (${chain}): decoded step by step, the key redacted`, async () => {
        const res = await h.send(`/openai/echo-key-compressed?enc=${chain}&repeat=200`, {
          headers: bearer(token),
        });
        expect(res.status).toBe(401);
        expect(res.headers['content-encoding']).toBeUndefined();
        expect(res.text).toBe(redacted(200));
      });
    }

    it('an encoding it cannot decode is refused with 502: its body could not be checked for the key', async () => {
      const lines = h.logLines.length;
      const res = await h.send('/openai/echo-key-compressed?enc=none&as=x-custom', {
        headers: bearer(token),
      });
      expect(res.status).toBe(502);
      expect(res.json.error).toMatchObject({ code: 'upstream_unreachable' });
      // The provider answered (and may have charged): not to be sent again by the SDKs.
      expect(res.headers['x-should-retry']).toBe('false');
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.text).not.toContain(REAL_KEY);
      const logged = h.logLines.slice(lines).join('\n');
      expect(logged).toContain('TOKENPROXY_UNDECODABLE_ENCODING');
      expect(logged).toContain('"cause":"content_encoding"');
      expect(logged).not.toContain(REAL_KEY);
      const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
      expect(record).toMatchObject({ status: 502, errorCode: 'upstream_unreachable' });
    });
  });
}
