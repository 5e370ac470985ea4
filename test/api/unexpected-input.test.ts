import { describe, expect, it } from 'vitest';
import { unexpectedBody, unexpectedQuery } from '../../src/api/unexpected-input.js';

describe('unexpectedBody', () => {
  it.each([
    [undefined, undefined, undefined],
    [{}, undefined, undefined],
    [{ token_ids: ['tok_1'] }, 'unknown_parameter', 'token_ids'],
    [{ a: 1, b: 2 }, 'unknown_parameter', 'a'],
    [[1], 'unknown_parameter', undefined],
    ['text', 'unknown_parameter', undefined],
    [null, 'unknown_parameter', undefined],
    [0, 'unknown_parameter', undefined],
  ])('%j → %s', (body, code, param) => {
    const refused = unexpectedBody('POST', '/v1/tokens/revoke_all', body);
    expect(refused?.code).toBe(code);
    expect(refused?.param).toBe(param);
    if (refused !== undefined)
      expect(refused.message).toContain('POST /v1/tokens/revoke_all takes no request body');
  });
});

describe('unexpectedQuery', () => {
  it.each([
    [undefined, undefined],
    [{}, undefined],
    [{ limit: '2' }, 'limit'],
    [{ foo: '', bar: '1' }, 'foo'],
  ])('%j → %s', (query, param) => {
    const refused = unexpectedQuery('GET', '/v1/providers', query);
    expect(refused?.param).toBe(param);
    if (refused !== undefined) {
      expect(refused.code).toBe('unknown_parameter');
      expect(refused.message).toContain('GET /v1/providers takes no query parameters');
    }
  });
});
