import { createRequire } from 'node:module';
import type * as Jsonc from 'jsonc-parser';

/**
 * Where a config file stops being JSON, in words that never quote the file. V8's own message for an
 * unquoted value quotes the text around it ("Unexpected token 'S', ..."s11_pin": S3cr3t-PIN"...),
 * which would print part of a PIN or password left unquoted; other messages give a position but
 * no way to fix it. jsonc-parser (a scanner made for editors) reports every error by offset and code.
 */
export type JsonParse =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: string };

/** What each of jsonc-parser's error codes means to someone editing the file. */
const WHAT: Readonly<Record<string, string>> = {
  InvalidSymbol: 'a value was expected: text must be in double quotes ("…"), secrets included',
  InvalidNumberFormat:
    'this number is not written as JSON writes numbers (no leading zeros, no trailing dot)',
  PropertyNameExpected: 'a key in double quotes was expected (and no comma after the last entry)',
  ValueExpected: 'a value was expected (and no comma after the last entry)',
  ColonExpected: 'a colon (:) was expected after the key',
  CommaExpected: 'a comma was expected between two entries',
  CloseBraceExpected: 'a closing } was expected',
  CloseBracketExpected: 'a closing ] was expected',
  EndOfFileExpected: 'the file should end after its object',
  InvalidCommentToken: 'comments are not allowed in JSON',
  UnexpectedEndOfComment: 'comments are not allowed in JSON',
  UnexpectedEndOfString: 'a string is not closed with a double quote',
  UnexpectedEndOfNumber: 'a number is cut short',
  InvalidUnicode: 'a \\u escape needs four hexadecimal digits',
  InvalidEscapeCharacter: 'this backslash escape is not one JSON knows (write \\\\ for a backslash)',
  InvalidCharacter: 'a string holds a control character such as a tab or a line break (write \\t or \\n)',
};

export function parseJsonFile(text: string): JsonParse {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, problem: locate(text) };
  }
}

function locate(text: string): string {
  // Loaded only for a file that failed: a good config never needs the scanner in the heap.
  const jsonc = createRequire(import.meta.url)('jsonc-parser') as typeof Jsonc;
  const errors: Jsonc.ParseError[] = [];
  const root = jsonc.parseTree(text, errors, {
    disallowComments: true,
    allowTrailingComma: false,
    allowEmptyContent: false,
  });
  const first = errors[0];
  if (first === undefined) {
    return 'it is not valid JSON (check the quotes, commas and brackets)';
  }
  // Stray text after a complete object is reported as a bad symbol; what to do is end the file.
  let code = jsonc.printParseErrorCode(first.error);
  if (code === 'InvalidSymbol' && root !== undefined && first.offset >= root.offset + root.length) {
    code = 'EndOfFileExpected';
  }
  const { line, column } = lineAndColumn(text, first.offset);
  return `line ${line}, column ${column}: ${WHAT[code] ?? 'this is not valid JSON'}`;
}

/** 1-based, as editors count; columns in characters. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}
