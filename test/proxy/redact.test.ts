import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { redactingTransform, redactText, StreamRedactor } from '../../src/proxy/redact.js';

const KEY = 'sk-abcabd-KEY-123';

/** Feeds `chunks` through one redactor; returns the output and what was emitted per chunk. */
function run(secret: string, chunks: string[]): { out: string; emitted: string[] } {
  const r = new StreamRedactor(Buffer.from(secret));
  const emitted = chunks.map((c) => r.write(Buffer.from(c)).toString());
  const tail = r.flush().toString();
  return { out: emitted.join('') + tail, emitted };
}

describe('StreamRedactor', () => {
  const table: [string, string[], string][] = [
    ['no key', ['hello ', 'world'], 'hello world'],
    ['whole key in one chunk', [`a ${KEY} b`], 'a [REDACTED] b'],
    ['key twice', [`${KEY}${KEY}`], '[REDACTED][REDACTED]'],
    ['key at the very end', [`x${KEY}`], 'x[REDACTED]'],
    ['key across three chunks', ['a sk-ab', 'cabd-KE', 'Y-123 b'], 'a [REDACTED] b'],
    ['a prefix that does not continue', ['a sk-abc', 'X'], 'a sk-abcX'],
    ['a prefix at the end of the stream', ['tail sk-abcab'], 'tail sk-abcab'],
    ['one byte per chunk', Array.from(`<${KEY}>`, (c) => c), '<[REDACTED]>'],
    ['empty chunks', ['', KEY, '', ''], '[REDACTED]'],
  ];
  for (const [name, chunks, expected] of table) {
    it(name, () => {
      expect(run(KEY, chunks).out).toBe(expected);
    });
  }

  it('self-overlapping secrets: the held tail restarts inside itself', () => {
    expect(run('aab', ['aa', 'ab']).out).toBe('a[REDACTED]');
    expect(run('abab', ['xab', 'aba', 'b']).out).toBe('xababab'.replaceAll('abab', '[REDACTED]'));
    expect(run('aaaa', ['aaa', 'aaa']).out).toBe('[REDACTED]aa');
  });

  it('redacts the key split at every position, with text around it', () => {
    const whole = `data: {"echo":"Bearer ${KEY}"}\n\n`;
    const start = whole.indexOf(KEY);
    for (let cut = start; cut <= start + KEY.length; cut++) {
      const { out } = run(KEY, [whole.slice(0, cut), whole.slice(cut)]);
      expect(out, `cut at ${cut}`).toBe('data: {"echo":"Bearer [REDACTED]"}\n\n');
    }
    for (let a = 0; a < whole.length; a++) {
      for (let b = a; b < whole.length; b++) {
        const { out } = run(KEY, [whole.slice(0, a), whole.slice(a, b), whole.slice(b)]);
        expect(out).toBe('data: {"echo":"Bearer [REDACTED]"}\n\n');
      }
    }
  });

  it('holds back only a tail that is a prefix of the key, never more', () => {
    const { emitted } = run(KEY, ['first part sk-a', 'nother part']);
    expect(emitted[0]).toBe('first part ');
    expect(emitted[1]).toBe('sk-another part');
    expect(run(KEY, ['no suspicious tail']).emitted[0]).toBe('no suspicious tail');
  });

  it('passes a clean chunk on as the same Buffer', () => {
    const r = new StreamRedactor(Buffer.from(KEY));
    const chunk = Buffer.from('nothing to see');
    expect(r.write(chunk)).toBe(chunk);
  });

  it('refuses an empty secret', () => {
    expect(() => new StreamRedactor(Buffer.alloc(0))).toThrow(RangeError);
  });

  it('works as a Transform', async () => {
    const out = await text(
      Readable.from(['x sk-abc', 'abd-KEY-1', '23 y'].map((s) => Buffer.from(s))).pipe(
        redactingTransform(Buffer.from(KEY)),
      ),
    );
    expect(out).toBe('x [REDACTED] y');
  });
});

describe('redactText', () => {
  it.each([
    [`Bearer ${KEY}`, 'Bearer [REDACTED]'],
    [`${KEY},${KEY}`, '[REDACTED],[REDACTED]'],
    ['unrelated', 'unrelated'],
  ])('%s', (value, expected) => {
    expect(redactText(value, KEY)).toBe(expected);
  });
});

describe('StreamRedactor with several secrets', () => {
  const secrets = ['abcdef', 'xyz123', 'abcdefgh'].map((s) => Buffer.from(s));
  const table: [string, string[], string][] = [
    ['each secret', ['1 abcdef 2 xyz123 3'], '1 [REDACTED] 2 [REDACTED] 3'],
    ['the longer of two at the same place', ['<abcdefgh>'], '<[REDACTED]>'],
    ['split across chunks', ['xy', 'z1', '23 abcde', 'fgh!'], '[REDACTED] [REDACTED]!'],
    ['a held prefix of one that becomes another', ['abc', 'def.'], '[REDACTED].'],
    ['nothing', ['plain ', 'text'], 'plain text'],
  ];
  for (const [name, chunks, expected] of table) {
    it(name, () => {
      const r = new StreamRedactor(secrets.slice().sort((a, b) => b.length - a.length));
      const out = chunks.map((c) => r.write(Buffer.from(c)).toString()).join('') + r.flush().toString();
      expect(out).toBe(expected);
    });
  }

  it('redactText replaces each secret, longest first', () => {
    expect(redactText('abcdefgh xyz123', ['abcdefgh', 'abcdef', 'xyz123'])).toBe('[REDACTED] [REDACTED]');
  });
});
