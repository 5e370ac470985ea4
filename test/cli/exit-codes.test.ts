import { describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../src/cli/main.js';
import { ConfigError } from '../../src/config/config-error.js';
import { StoreTooNewError, StoreUnavailableError } from '../../src/store/errors.js';
import { TlsMaterialError } from '../../src/tls/tls-material.js';
import { KekChangedError, KekError } from '../../src/vault/kek-error.js';

describe('the CLI exit code of a failed command', () => {
  it.each([
    ['a bad setting', new ConfigError('Setting "api_port": …'), 2, 'invalid_config'],
    ['a TLS file', new TlsMaterialError('tls_cert', 'tls_cert: …'), 2, 'invalid_config'],
    ['the master key variable', new KekError('TOKENPROXY_MASTER_KEY', '…'), 2, 'invalid_config'],
    ['the master key file', new KekError('master.key (/d/master.key)', '…'), 2, 'invalid_config'],
    ['an HSM setting', new KekError('pkcs11_pin', '…'), 2, 'invalid_config'],
    ['KEK versions changed meanwhile', new KekChangedError('… start again'), 1, 'kek_changed_meanwhile'],
    ['the database is down', new StoreUnavailableError('…'), 1, 'store_unavailable'],
    ['a store a newer version upgraded', new StoreTooNewError('0099_x'), 1, 'store_too_new'],
    ['anything else', new Error('boom'), 1, undefined],
  ])('%s: exit %i, code %s', (_what, err, exit, code) => {
    expect(exitCodeOf(err)).toBe(exit);
    expect((err as { code?: unknown }).code).toBe(code);
  });

  it('something thrown that is not an Error is a failure, not a bad setting', () => {
    expect(exitCodeOf('a string')).toBe(1);
  });
});
