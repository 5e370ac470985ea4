import { describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { useBadInputSuite } from './bad-input-setup.js';
import { createToken, expectError, ok, tokenBody, type TokenJson } from './helpers.js';

/** Bad input gets a clear error and changes nothing (see bad-input-setup.ts). */

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`bad input to the management API (${fixture.name})`, () => {
    const { c, maker, postRaw } = useBadInputSuite(fixture);

    describe('body shape', () => {
      it('refuses malformed JSON with 400 invalid_json', async () => {
        for (const raw of ['{', '{"name": }', "{'name': 'x'}", '{"name":"x",}', 'nul', '{"a":1}{"b":2}']) {
          const error = expectError(await postRaw(raw), 400, 'invalid_json');
          expect(error.type).toBe('invalid_request');
          expect(error.message).toMatch(/JSON/);
        }
      });

      it('refuses a body that is not UTF-8, instead of storing U+FFFD in its place', async () => {
        const bytes = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xe9]), Buffer.from('"}')]);
        const res = await c.request('PATCH', '/v1/account', {
          raw: bytes,
          headers: { 'content-type': 'application/json' },
        });
        const error = expectError(res, 400, 'invalid_json');
        expect(error.message).toContain('UTF-8');
        expect(ok<{ name: string }>(await c.request('GET', '/v1/account')).name).not.toContain('\ufffd');
      });

      it('names a "__proto__" or constructor.prototype key as what is refused, not the JSON', async () => {
        for (const raw of [
          '{"__proto__":{"x":1},"name":"a"}',
          '{"constructor":{"prototype":{"x":1}},"name":"a"}',
        ]) {
          const error = expectError(await postRaw(raw), 400, 'invalid_json');
          expect(error.message).toContain('__proto__');
          expect(error.message).not.toContain('not valid JSON');
        }
      });

      it('refuses an empty body', async () => {
        expectError(await postRaw(''), 400, 'invalid_json');
        // No body and no content type at all.
        expectError(await c.request('POST', '/v1/tokens'), 400, 'invalid_json');
        expectError(await c.request('POST', '/v1/keys'), 400, 'invalid_json');
        expectError(await c.request('PATCH', '/v1/account'), 400, 'invalid_json');
      });

      it('takes Content-Type: application/json with an empty body as no body (curl habits)', async () => {
        // What `curl -X DELETE -H 'Content-Type: application/json' -d ''` sends.
        const json = { raw: '', headers: { 'content-type': 'application/json', 'content-length': '0' } };
        const created = await createToken(maker);
        const revoked = ok<TokenJson>(await maker.request('DELETE', `/v1/tokens/${created.token_id}`, json));
        expect(revoked.status).toBe('revoked');
        ok(await maker.request('GET', '/v1/tokens', json));
        ok(await maker.request('GET', '/v1/account', json));
        // A body that is there but is not JSON is still refused, on any method.
        expectError(
          await maker.request('DELETE', `/v1/tokens/${created.token_id}`, {
            raw: '{',
            headers: { 'content-type': 'application/json' },
          }),
          400,
          'invalid_json',
        );
        // And a POST that needs a body still says so.
        expectError(await postRaw(''), 400, 'invalid_json');
      });

      it.each([
        ['an array', '[]'],
        ['an array of the right object', JSON.stringify([tokenBody()])],
        ['a string', '"hello"'],
        ['a number', '42'],
        ['true', 'true'],
        ['null', 'null'],
      ])('refuses a JSON body that is %s with a 400 asking for an object', async (_label, raw) => {
        const error = expectError(await postRaw(raw), 400, 'invalid_json');
        expect(error.message).toMatch(/object/);
      });

      it('refuses a body over 1 MB with 413 body_too_large', async () => {
        const big = JSON.stringify(tokenBody({ name: 'x'.repeat(1024 * 1024) }));
        const error = expectError(await postRaw(big), 413, 'body_too_large');
        expect(error.message).toContain('1 MB');
        // Also on other routes with bodies.
        expectError(
          await c.request('PATCH', '/v1/account', {
            raw: JSON.stringify({ name: 'y'.repeat(1024 * 1024 + 10) }),
          }),
          413,
          'body_too_large',
        );
      });

      it('accepts a body just under 1 MB as far as size goes (then validates it)', async () => {
        // 1 MB minus a little: not refused for size, refused for the over-long name instead.
        const body = JSON.stringify(tokenBody({ name: 'x'.repeat(1024 * 1024 - 200) }));
        expect(body.length).toBeLessThan(1024 * 1024);
        expectError(await postRaw(body), 400, 'invalid_parameter', 'name');
      });

      it.each([
        'text/plain',
        'application/xml',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/vnd.api+json',
      ])('refuses Content-Type %s with 415 unsupported_media_type', async (contentType) => {
        const error = expectError(
          await postRaw(JSON.stringify(tokenBody()), contentType),
          415,
          'unsupported_media_type',
        );
        expect(error.message).toContain('application/json');
      });

      it('accepts application/json with a charset parameter', async () => {
        ok(
          await maker.request('POST', '/v1/tokens', {
            raw: JSON.stringify(tokenBody()),
            headers: { 'content-type': 'application/json; charset=utf-8' },
          }),
          201,
        );
      });
    });
  });
}
