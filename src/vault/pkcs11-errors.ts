/**
 * How the HSM thread names a PKCS#11 failure. pkcs11js throws Pkcs11Error with the CK_RV as a number
 * (`code`) and the function (`method`); callers decide on the number, and the name users read comes
 * from this table, never from the binding's wording of its message.
 */
import pkcs11js from 'pkcs11js';

/** PKCS#11 3.0's CKR_AEAD_DECRYPT_FAILED, which pkcs11js 2 has no constant for. */
export const CKR_AEAD_DECRYPT_FAILED = 0x35;
/** Values from here up are the HSM vendor's own (PKCS#11 2.40 §3.6); pkcs11js has no constant. */
const CKR_VENDOR_DEFINED = 0x80000000;

/** CK_RV → its CKR_ name: the binding's own constants, plus the 3.0 value it lacks. */
const CKR_NAMES: ReadonlyMap<number, string> = new Map([
  ...Object.entries(pkcs11js)
    .filter((entry): entry is [string, number] => entry[0].startsWith('CKR_') && typeof entry[1] === 'number')
    .map(([name, value]) => [value, name] as const),
  [CKR_AEAD_DECRYPT_FAILED, 'CKR_AEAD_DECRYPT_FAILED'],
]);

/** The CKR_ name of a return value; an unknown one by its number, as the HSM's documentation lists it. */
export function ckrName(value: number): string {
  const known = CKR_NAMES.get(value);
  if (known !== undefined) return known;
  const hex = `0x${value.toString(16).toUpperCase().padStart(8, '0')}`;
  return value >= CKR_VENDOR_DEFINED ? `CKR_VENDOR_DEFINED (${hex})` : `CKR ${hex}`;
}

/** The CK_RV of a PKCS#11 failure; undefined for any other error. */
export function ckrOf(err: unknown): number | undefined {
  return err instanceof pkcs11js.Pkcs11Error ? err.code : undefined;
}

/**
 * What went wrong, for a message: a PKCS#11 failure as its CKR_ name and the function that returned
 * it; anything else (the library that did not load, the thread's own checks) by its message, which
 * holds no secret (the PIN is never in one).
 */
export function describeHsmFailure(err: unknown): string {
  if (err instanceof pkcs11js.Pkcs11Error) {
    return err.method === '' ? ckrName(err.code) : `${ckrName(err.code)} from ${err.method}`;
  }
  return err instanceof Error ? err.message : 'unknown error';
}
