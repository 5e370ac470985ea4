/**
 * A bad setting: the message names the setting and how to fix it, and the CLI exits 2 (README,
 * "Commands"). Errors of modules that check a setting (TLS files, the master key) extend it, so every
 * start-up failure caused by configuration is reported the same way.
 */
export class ConfigError extends Error {
  // One code for every bad setting, subclasses included: `setting` (on those that have it) says
  // which, and exit code 2 follows from the class.
  readonly code = 'invalid_config';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}
