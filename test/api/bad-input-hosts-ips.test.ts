import { describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { useBadInputSuite } from './bad-input-setup.js';
import { expectError, ok, tokenBody, type TokenJson } from './helpers.js';

/** Bad input gets a clear error and changes nothing (see bad-input-setup.ts). */

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`bad input to the management API (${fixture.name})`, () => {
    const { post, make } = useBadInputSuite(fixture);

    describe('allowed_hosts', () => {
      it('refuses an empty list with 400 naming allowed_hosts', async () => {
        const error = expectError(
          await post(tokenBody({ allowed_hosts: [] })),
          400,
          'invalid_parameter',
          'allowed_hosts',
        );
        expect(error.message).toContain('allowed_hosts');
      });

      it.each([
        '',
        'a b.com',
        'https://a.com/path',
        '*.com',
        'a.*.com',
        '*example.com',
        'example.com:99999',
        'example.com:8080',
        'ftp://a.com',
        'http://a.com:0',
        'user@a.com',
        'https://user:pass@a.com',
        'https://*.example.com',
        'http://a.com:70000',
        'a..com',
        '-a.com',
        'a.com?x=1',
        '::1',
        '*',
        'https://',
        'exa\tmple.com',
        '999.1.1.1',
      ])('refuses allowed_hosts entry %j with 400 naming allowed_hosts[i] and the entry', async (entry) => {
        const error = expectError(
          await post(tokenBody({ allowed_hosts: ['localhost', entry] })),
          400,
          'invalid_parameter',
          'allowed_hosts[1]',
        );
        expect(error.message).toContain(JSON.stringify(entry));
      });

      it('accepts valid entries and stores them normalised', async () => {
        const t = ok<TokenJson>(
          await make(
            tokenBody({
              allowed_hosts: [
                'localhost',
                'app.example.com',
                '*.example.com',
                'https://app.example.com:8443',
                'http://localhost:3000',
                'bücher.example',
                '[::1]',
                '127.0.0.1',
                'APP.Example.COM',
                'https://Secure.Example.com:443',
                'https://app.example.com/',
                'example.com.',
              ],
            }),
          ),
          201,
        );
        expect(t.authorized_origins).toEqual([
          'localhost',
          'app.example.com',
          '*.example.com',
          'https://app.example.com:8443',
          'http://localhost:3000',
          'xn--bcher-kva.example',
          '[::1]',
          '127.0.0.1',
          'https://secure.example.com',
          'https://app.example.com',
          'example.com',
        ]);
      });

      it.each([
        'localhost',
        'app.example.com',
        '*.example.com',
        'https://app.example.com:8443',
        'http://localhost:3000',
        '[::1]',
        '127.0.0.1',
      ])('accepts %s on its own', async (entry) => {
        const t = ok<TokenJson>(await make(tokenBody({ allowed_hosts: [entry] })), 201);
        expect(t.authorized_origins).toEqual([entry]);
      });
    });

    describe('allowed_ips', () => {
      it.each([
        'garbage',
        '10.0.0.0/33',
        '10.0.0.1/8',
        '300.1.1.1',
        '2001:db8::/129',
        '',
        '10.0.0.1 ',
        'fe80::1%eth0',
      ])('refuses allowed_ips entry %j with 400 naming allowed_ips[i] and the entry', async (entry) => {
        const error = expectError(
          await post(tokenBody({ allowed_ips: ['10.0.0.1', entry] })),
          400,
          'invalid_parameter',
          'allowed_ips[1]',
        );
        expect(error.message).toContain(JSON.stringify(entry));
      });

      it('accepts addresses and ranges of both families, normalised', async () => {
        const t = ok<TokenJson>(
          await make(
            tokenBody({
              allowed_ips: ['10.0.0.0/8', '192.168.1.7', '2001:DB8::/32', '::ffff:10.1.2.3', '10.0.0.0/8'],
            }),
          ),
          201,
        );
        expect(t.authorized_ips).toEqual(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32', '10.1.2.3']);
        const empty = ok<TokenJson>(await make(tokenBody({ allowed_ips: [] })), 201);
        expect(empty.authorized_ips).toEqual([]);
      });
    });
  });
}
