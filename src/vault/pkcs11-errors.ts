/** How the HSM thread's modules tell a wrong setting from a failing HSM. */
import type { Pkcs11Setting } from './pkcs11-protocol.js';

export class SettingError extends Error {
  constructor(
    readonly setting: Pkcs11Setting,
    message: string,
  ) {
    super(message);
  }
}

export function pkcs11Code(err: unknown): string {
  return err instanceof Error ? err.message.split(':')[0]?.trim() || err.name : 'unknown error';
}
