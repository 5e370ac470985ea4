import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { secretsOnCommandLine } from '../../src/config/secret-flags.js';

const MODULE = '/usr/lib/softhsm/libsofthsm2.so';

describe('secretsOnCommandLine', () => {
  it.each([
    ['nothing secret', { flags: { api_port: '9443' }, env: {} }, []],
    [
      'a PIN as a flag',
      {
        flags: { kek: 'pkcs11', pkcs11_module: MODULE, pkcs11_token_label: 't', pkcs11_pin: '1234' },
        env: {},
      },
      ['pkcs11_pin'],
    ],
    [
      'a PIN in the environment',
      {
        flags: { kek: 'pkcs11', pkcs11_module: MODULE, pkcs11_token_label: 't' },
        env: { TOKENPROXY_PKCS11_PIN: '1234' },
      },
      [],
    ],
    [
      'a database URL with a password',
      { flags: { database: 'postgres://tp:pw@db/tokenproxy' }, env: {} },
      ['database'],
    ],
    ['a database URL without one', { flags: { database: 'postgres://tp@db/tokenproxy' }, env: {} }, []],
    [
      'a database URL with the password as a query parameter',
      { flags: { database: 'postgres://tp@db/tokenproxy?password=pw' }, env: {} },
      ['database'],
    ],
    ['a Redis URL with a password', { flags: { redis: 'redis://:pw@cache:6379' }, env: {} }, ['redis']],
    ['a Redis URL without one', { flags: { redis: 'redis://cache:6379' }, env: {} }, []],
    [
      'an SMTP URL with a password',
      { flags: { smtp_url: 'smtps://u:pw@mail.example.com' }, env: {} },
      ['smtp_url'],
    ],
    [
      'the same URLs from the environment',
      {
        flags: {},
        env: {
          TOKENPROXY_DATABASE: 'postgres://tp:pw@db/tokenproxy',
          TOKENPROXY_REDIS: 'redis://:pw@cache:6379',
          TOKENPROXY_SMTP_URL: 'smtps://u:pw@mail.example.com',
        },
      },
      [],
    ],
  ])('%s', (_name, input, expected) => {
    expect(secretsOnCommandLine(loadConfig(input))).toEqual(expected);
  });
});
