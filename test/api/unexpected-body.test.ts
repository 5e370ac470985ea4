import { describe, expect, it } from 'vitest';
import { unexpectedBody } from '../../src/api/unexpected-body.js';

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
