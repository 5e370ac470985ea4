import { describe, expect, it } from 'vitest';
import { lineAndColumn, parseJsonFile } from '../../src/config/json-syntax.js';

/** A value that must never appear in an error, whatever the mistake around it. */
const SECRET = 'S3cr3t-PIN-998877';

describe('parseJsonFile', () => {
  it.each([
    ['an unquoted secret', `{\n  "kek": "pkcs11",\n  "pkcs11_pin": ${SECRET}\n}`, 3, 17, /double quotes/],
    ['a single-quoted secret', `{\n  "redis": '${SECRET}'\n}`, 2, 12, /double quotes/],
    [
      'a trailing comma',
      `{\n  "smtp_url": "smtp://u:${SECRET}@mail",\n}`,
      3,
      1,
      /no comma after the last entry/,
    ],
    [
      'a missing comma',
      `{ "database": "postgres://u:${SECRET}@db/x" "log_level": "info" }`,
      1,
      53,
      /comma was expected/,
    ],
    ['a missing colon', `{ "pkcs11_pin" "${SECRET}" }`, 1, 16, /colon/],
    ['an unclosed object', `{ "pkcs11_pin": "${SECRET}"`, 1, 36, /closing \}/],
    ['an unclosed string', `{ "pkcs11_pin": "${SECRET}`, 1, 17, /not closed/],
    ['a comment', `{\n  // the PIN\n  "pkcs11_pin": "${SECRET}"\n}`, 2, 3, /comments are not allowed/],
    ['a tab inside a string', `{ "pkcs11_pin": "${SECRET}\tx" }`, 1, 17, /control character/],
    ['a bad escape', `{ "pkcs11_pin": "${SECRET}\\q" }`, 1, 17, /backslash escape/],
    ['text after the object', `{ "log_level": "info" } ${SECRET}`, 1, 25, /should end after its object/],
    ['an empty file', '', 1, 1, /value was expected/],
  ])('%s: says where and what, never the text', (_name, text, line, column, what) => {
    const parsed = parseJsonFile(text);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problem).toContain(`line ${line}, column ${column}:`);
    expect(parsed.problem).toMatch(what);
    for (let i = 0; i + 4 <= SECRET.length; i++) expect(parsed.problem).not.toContain(SECRET.slice(i, i + 4));
  });

  it('hands back what a valid file holds', () => {
    expect(parseJsonFile('{ "api_port": 9443, "providers": {} }')).toEqual({
      ok: true,
      value: { api_port: 9443, providers: {} },
    });
  });

  it.each([
    ['ab', 0, 1, 1],
    ['ab', 1, 1, 2],
    ['a\nbc', 2, 2, 1],
    ['a\nbc', 3, 2, 2],
    ['a\n\nb', 3, 3, 1],
    ['a\r\nb', 3, 2, 1],
  ])('lineAndColumn(%j, %i) is line %i, column %i', (text, offset, line, column) => {
    expect(lineAndColumn(text, offset)).toEqual({ line, column });
  });
});
