import { describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { useBadInputSuite } from './bad-input-setup.js';
import { expectError, ok, tokenBody } from './helpers.js';

/** Bad input gets a clear error and changes nothing (see bad-input-setup.ts). */

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`bad input to the management API (${fixture.name})`, () => {
    const { h, c, post, make } = useBadInputSuite(fixture);

    describe('real_key and key_id', () => {
      it.each([
        ['empty', ''],
        ['over 4096 characters', `sk-${'a'.repeat(4094)}`],
        ['with a space', 'sk-abc def-0123456789'],
        ['with a newline', 'sk-abc\ndef-0123456789'],
        ['with CR LF', 'sk-abc\r\nX-Injected: 1'],
        ['with a tab', 'sk-abc\tdef'],
        ['with a NUL', 'sk-abc\u0000def'],
        ['with non-ASCII', 'sk-abcé-0123456789'],
      ])('refuses a real_key %s with 400 param real_key', async (_label, realKey) => {
        const res = await post(tokenBody({ real_key: realKey }));
        expectError(res, 400, 'invalid_parameter', 'real_key');
        if (realKey.length > 8) expect(res.text).not.toContain(realKey);
      });

      it('accepts a real_key of exactly 4096 characters', async () => {
        ok(await make(tokenBody({ real_key: `sk-${'b'.repeat(4093)}` })), 201);
      });

      it('refuses both real_key and key_id with 400', async () => {
        const key = (await h.store.keys.list(c.accountId, { limit: 1 })).items[0];
        const error = expectError(await post(tokenBody({ key_id: key?.id })), 400, 'invalid_parameter');
        expect(error.message).toContain('real_key');
        expect(error.message).toContain('key_id');
      });

      it('refuses neither real_key nor key_id with 400 missing_parameter real_key', async () => {
        const error = expectError(
          await post(tokenBody({ real_key: undefined })),
          400,
          'missing_parameter',
          'real_key',
        );
        expect(error.message).toContain('key_id');
      });
    });

    describe('other routes', () => {
      it('refuses bad bodies on /v1/keys and rotate, and bad ids, changing nothing', async () => {
        const key = (await h.store.keys.list(c.accountId, { limit: 1 })).items[0];
        const keyId = key?.id ?? '';
        expectError(await c.request('POST', '/v1/keys', { raw: '{' }), 400, 'invalid_json');
        expectError(await c.request('POST', '/v1/keys', { body: [] }), 400, 'invalid_json');
        expectError(
          await c.request('POST', '/v1/keys', {
            body: { name: 'k', provider: 'openai', realKey: 'sk-0123456789abcdef' },
          }),
          400,
          'unknown_parameter',
        );
        expectError(
          await c.request('POST', `/v1/keys/${keyId}/rotate`, { raw: 'nope' }),
          400,
          'invalid_json',
        );
        expectError(
          await c.request('POST', `/v1/keys/${keyId}/rotate`, { body: { real_key: 5 } }),
          400,
          'invalid_parameter',
          'real_key',
        );
        expectError(
          await c.request('POST', `/v1/keys/${keyId}/rotate`, {
            raw: 'sk-x',
            headers: { 'content-type': 'text/plain' },
          }),
          415,
          'unsupported_media_type',
        );
        expectError(await c.request('PATCH', '/v1/account', { raw: '{"name":' }), 400, 'invalid_json');
      });
    });
  });
}
