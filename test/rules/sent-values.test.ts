import { describe, expect, it } from 'vitest';
import { shownOrigin, shownPath } from '../../src/rules/sent-values.js';

describe('shownOrigin: only an origin is shown as sent', () => {
  it.each([
    ['https://app.example.com', 'https://app.example.com'],
    ['http://localhost:5173', 'http://localhost:5173'],
    ['https://App.Example.com', 'https://App.Example.com'],
    ['https://xn--bcher-kva.example', 'https://xn--bcher-kva.example'],
  ])('%s is shown as it is', (sent, shown) => {
    expect(shownOrigin(sent)).toBe(shown);
  });

  it.each([
    ['free text with a link', '"><img src=x> please visit https://evil.example/reset'],
    ['a path after the origin', 'https://app.example.com/reset-your-password'],
    ['a line break', 'https://a.example\r\nBcc: x@evil.example'],
    ['null', 'null'],
    ['a default port written out', 'https://app.example.com:443'],
    ['a user part', 'https://support@evil.example'],
    ['no scheme', 'app.example.com'],
    ['an overlong host', `https://${'a'.repeat(400)}.example`],
  ])('%s is described, not shown', (_what, sent) => {
    const shown = shownOrigin(sent);
    expect(shown).toBe(
      `(not an origin: a header of ${sent.length} characters, shown as sent in the anomaly log)`,
    );
  });
});

describe('shownPath: short paths as sent, the rest cut or described', () => {
  it.each([
    ['/openai/v1/chat/completions', '/openai/v1/chat/completions'],
    ['/openai/v1/models?limit=5', '/openai/v1/models?limit=5'],
    [`/openai/${'a'.repeat(200)}`, `/openai/${'a'.repeat(112)}… (208 characters)`],
    [
      '/openai/please visit evil.example',
      '(a path of 33 characters with spaces or control characters; see the anomaly log)',
    ],
    ['/openai/\u202Eexe', '(a path of 12 characters with spaces or control characters; see the anomaly log)'],
  ])('%s', (sent, shown) => {
    expect(shownPath(sent)).toBe(shown);
  });
});
