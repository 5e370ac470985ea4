import { describe, expect, it } from 'vitest';
import { unsafePath } from '../../src/proxy/path-guard.js';

describe('unsafePath', () => {
  it.each([
    // Literal dot segments
    '/openai/../admin',
    '/openai/v1/../../admin',
    '/openai/./v1/models',
    '/openai/v1/..',
    '/openai/v1/.',
    // Percent-encoded, any case, and encoded again (decoded until stable)
    '/openai/%2e%2e/admin',
    '/openai/%2E./admin',
    '/openai/v1/%2e',
    '/openai/%252e%252e/admin',
    '/openai/%25252e%25252e/admin',
    '/openai/.%2e/admin',
    // An encoded slash that makes a dot segment once decoded
    '/openai/..%2fadmin',
    '/openai/..%2Fadmin',
    '/openai/v1%2f..%2fadmin',
    '/openai/%2e%2e%252fadmin',
    // Backslashes, literal or encoded
    '/openai/v1\\..\\admin',
    '/openai/v1\\models',
    '/openai/v1/%5cadmin',
    '/openai/v1/%5Cadmin',
    '/openai/v1/%255cadmin',
    // `;` parameters after dot segments (Tomcat, Spring)
    '/openai/..;/admin',
    '/openai/..;jsessionid=1/admin',
    '/openai/.;/v1',
    '/openai/%2e%2e;/admin',
    '/openai/%2e%2e%3b/admin',
  ])('refuses %j', (path) => {
    expect(unsafePath(path)).toBe(true);
  });

  it.each([
    '/openai/v1/chat/completions',
    '/openai/v1/files/a.b',
    '/openai/v1/..x/y',
    '/openai/v1/x..',
    '/openai/v1/...',
    '/openai/v1/%2e%2ex',
    '/openai/v1/models/gpt-4.1',
    '/openai/v1/models/ft%3Agpt-4o%3Aorg',
    '/openai/v1/a%2fb',
    '/openai/v1/a;b',
    '/openai/v1/100%',
    '/openai/v1/%zz',
    '/openai//evil.example/x',
    '/openai',
  ])('keeps %j', (path) => {
    expect(unsafePath(path)).toBe(false);
  });

  it('refuses a path that keeps decoding further than any server would', () => {
    let path = '%2e';
    for (let i = 0; i < 6; i++) path = path.replaceAll('%', '%25');
    expect(unsafePath(`/openai/v1/${path}x`)).toBe(true);
  });
});
