import { ConfigError } from '../config/config-error.js';

/**
 * The configured KEK cannot be used with this store: wrong master key, PIN, token or key label
 * (DESIGN §8). A bad setting, so the CLI exits 2; `setting` names it. Messages carry KEK ids (public
 * fingerprints) at most, never key material.
 */
export class KekError extends ConfigError {
  readonly setting: string;

  constructor(setting: string, message: string, options?: { cause?: unknown }) {
    super(message);
    this.name = 'KekError';
    this.setting = setting;
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}
