import { describe, expect, it } from 'vitest';
import { relayedHeaders } from '../../src/proxy/headers.js';
import { KeyPatterns, keyForms } from '../../src/proxy/key-encodings.js';
import { StreamRedactor, redactText } from '../../src/proxy/redact.js';

const KEY = 'sk-proj/Ab+c_d-9xYz~Q.k';

/** The same text encoded as a provider echoing it might: the key is inside, the encoding outside. */
const ECHOES: [string, (text: string) => string][] = [
  ['base64', (t) => Buffer.from(t).toString('base64')],
  ['base64url', (t) => Buffer.from(t).toString('base64url')],
  ['hex', (t) => Buffer.from(t).toString('hex')],
  ['HEX', (t) => Buffer.from(t).toString('hex').toUpperCase()],
  ['encodeURIComponent', (t) => encodeURIComponent(t)],
  ['JSON with \\/', (t) => JSON.stringify(t).replaceAll('/', '\\/')],
  [
    'JSON \\u escapes',
    (t) => t.replace(/[^A-Za-z0-9]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  ],
  [
    'JSON \\U escapes',
    (t) =>
      t.replace(/[^A-Za-z0-9]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`),
  ],
];

function redactAll(text: string, key = KEY): string {
  const patterns = new KeyPatterns(Buffer.from(key));
  const r = new StreamRedactor(patterns.patterns);
  return Buffer.concat([r.write(Buffer.from(text)), r.flush()]).toString();
}

/**
 * A key of the same shape whose every letter and digit differs from KEY's: where its encoding differs
 * from KEY's encoding, the encoded character depends on the key.
 */
const TWIN = KEY.replace(/[A-Za-z0-9]/g, (c) => (c === 'q' ? 'r' : 'q'));

describe('KeyPatterns', () => {
  for (const [name, encode] of ECHOES) {
    for (const prefix of ['', 'a', 'ab', 'Bearer ', '{"key":"']) {
      it(`redacts the key echoed as ${name} after ${JSON.stringify(prefix)}`, () => {
        const echoed = encode(`${prefix}${KEY} and more`);
        const twin = encode(`${prefix}${TWIN} and more`);
        expect(twin).toHaveLength(echoed.length);
        const out = redactAll(echoed);
        const at = out.indexOf('[REDACTED]');
        expect(at).toBeGreaterThanOrEqual(0);
        expect(out.indexOf('[REDACTED]', at + 1)).toBe(-1);
        // out is `echoed` with [at, end) replaced; at most the 2 characters that mix key bits with
        // their neighbours' (base64) may survive outside it.
        const end = at + echoed.length - (out.length - '[REDACTED]'.length);
        expect(out).toBe(`${echoed.slice(0, at)}[REDACTED]${echoed.slice(end)}`);
        let survived = 0;
        for (let i = 0; i < echoed.length; i++) {
          if ((i < at || i >= end) && echoed[i] !== twin[i]) survived += 1;
        }
        expect(survived).toBeLessThanOrEqual(2);
      });
    }
  }

  it('covers the 3 base64 alignments, standard and url-safe', () => {
    const forms = keyForms(Buffer.from(KEY)).map(String);
    for (let offset = 0; offset < 3; offset++) {
      const encoded = Buffer.from(`${'x'.repeat(offset)}${KEY}`).toString('base64');
      const found = forms.filter((f) => encoded.includes(f));
      expect(found.length, `offset ${offset}`).toBeGreaterThan(0);
      const url = Buffer.from(`${'x'.repeat(offset)}${KEY}`).toString('base64url');
      expect(
        forms.some((f) => url.includes(f)),
        `url-safe offset ${offset}`,
      ).toBe(true);
    }
  });

  it('lists each form once, longest first, and the raw key among them', () => {
    const forms = keyForms(Buffer.from(KEY)).map(String);
    expect(new Set(forms).size).toBe(forms.length);
    expect(forms).toContain(KEY);
    expect(forms).toContain(encodeURIComponent(KEY));
    expect(forms).toContain(KEY.replaceAll('/', '\\/'));
    for (let i = 1; i < forms.length; i++) {
      expect((forms[i - 1] as string).length).toBeGreaterThanOrEqual((forms[i] as string).length);
    }
  });

  it('adds no text encoding that equals the key (an alphanumeric key has no escapes)', () => {
    const forms = keyForms(Buffer.from('sk1234567890abcdef')).map(String);
    expect(forms.filter((f) => f === 'sk1234567890abcdef')).toHaveLength(1);
    expect(forms.some((f) => f.includes('\\'))).toBe(false);
  });

  it('holds back at most the longest form minus one byte, and only a real prefix', () => {
    const patterns = new KeyPatterns(Buffer.from(KEY));
    const longest = Math.max(...patterns.patterns.map((p) => p.length));
    expect(patterns.maxHold).toBe(longest - 1);
    const hex = Buffer.from(KEY).toString('hex');
    const r = new StreamRedactor(patterns.patterns);
    const first = r.write(Buffer.from(`text ${hex.slice(0, -1)}`));
    expect(first.toString()).toBe('text ');
    expect(r.write(Buffer.from(`${hex.slice(-1)} end`)).toString()).toBe('[REDACTED] end');
    expect(r.write(Buffer.from('plain text')).toString()).toBe('plain text');
  });

  it('redacts every encoding split across chunks at every position', () => {
    const patterns = new KeyPatterns(Buffer.from(KEY));
    for (const [name, encode] of ECHOES) {
      const whole = `data: ${encode(KEY)}\n\n`;
      const expected = redactAll(whole);
      for (let cut = 0; cut <= whole.length; cut++) {
        const r = new StreamRedactor(patterns.patterns);
        const out = Buffer.concat([
          r.write(Buffer.from(whole.slice(0, cut))),
          r.write(Buffer.from(whole.slice(cut))),
          r.flush(),
        ]).toString();
        expect(out, `${name} cut at ${cut}`).toBe(expected);
      }
    }
  });

  it('redacts header values in every form', () => {
    const patterns = new KeyPatterns(Buffer.from(KEY));
    for (const [name, encode] of ECHOES) {
      expect(redactText(`x ${encode(KEY)} y`, patterns.texts), name).toContain('[REDACTED]');
    }
  });

  it('shortest is the shortest form: a header value shorter than it is relayed without a scan', () => {
    const patterns = new KeyPatterns(Buffer.from(KEY));
    expect(patterns.shortest).toBe(Math.min(...patterns.patterns.map((p) => p.length)));
    // A header that is exactly the shortest form is still redacted; a shorter one is passed as is.
    const out = relayedHeaders({ 'x-echo': KEY, 'x-short': 'abc' }, true, patterns, undefined, 'req_1', null);
    expect(out.slice(0, 4)).toEqual(['x-echo', '[REDACTED]', 'x-short', 'abc']);
  });

  it('wipes every form', () => {
    const patterns = new KeyPatterns(Buffer.from(KEY));
    const views = patterns.patterns;
    patterns.wipe();
    for (const view of views) expect(view.every((b) => b === 0)).toBe(true);
  });

  it('a key that is not ASCII text gets its byte encodings only, and still redacts raw', () => {
    const key = Buffer.from([0x73, 0x6b, 0xff, 0x2f, 0x00, 0x41, 0x42, 0x43, 0x44, 0x45]);
    const forms = keyForms(key);
    expect(forms.some((f) => f.equals(key))).toBe(true);
    expect(forms.some((f) => f.toString('latin1') === key.toString('hex'))).toBe(true);
    expect(forms.some((f) => f.includes('%'))).toBe(false);
    expect(forms.some((f) => f.includes('\\'))).toBe(false);
  });

  it('refuses an empty key', () => {
    expect(() => new KeyPatterns(Buffer.alloc(0))).toThrow(RangeError);
  });
});
