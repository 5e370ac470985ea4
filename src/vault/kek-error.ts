import { ConfigError } from '../config/config-error.js';

/**
 * The configured KEK cannot be used with this store, or cannot be loaded at all: a wrong, missing,
 * malformed or exposed master key, PIN, token, key label or library (DESIGN §8). A bad setting, so
 * the CLI exits 2; `setting` names it as the user knows it (`TOKENPROXY_MASTER_KEY`, the master.key
 * path, `pkcs11_pin`). The one class for every bad KEK setting, the HSM thread's included (it sends
 * `setting` across and pkcs11-kek.ts builds this again). Messages carry KEK ids (public fingerprints)
 * at most, never key material.
 */
export class KekError extends ConfigError {
  readonly setting: string;

  constructor(setting: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KekError';
    this.setting = setting;
  }
}

/**
 * Another process changed the KEK versions (the store's records or the key files) while this one
 * was reading them, twice over or in a way it cannot follow. Nothing is wrong with the settings (exit
 * 1, not 2): running the command again finishes, which the message says.
 */
export class KekChangedError extends Error {
  readonly code = 'kek_changed_meanwhile';
  constructor(message: string) {
    super(message);
    this.name = 'KekChangedError';
  }
}
