import pkcs11js from 'pkcs11js';
import { describe, expect, it } from 'vitest';
import {
  CKR_AEAD_DECRYPT_FAILED,
  ckrName,
  ckrOf,
  describeHsmFailure,
} from '../../src/vault/pkcs11-errors.js';

/** A Pkcs11Error as the binding throws it, with words that name no CKR_ value. */
function failure(code: number, method = ''): pkcs11js.Pkcs11Error {
  return new pkcs11js.Pkcs11Error('the binding says something else entirely', code, method);
}

describe('PKCS#11 failures are named from their number', () => {
  it.each([
    [pkcs11js.CKR_PIN_INCORRECT, 'CKR_PIN_INCORRECT'],
    [pkcs11js.CKR_PIN_LOCKED, 'CKR_PIN_LOCKED'],
    [pkcs11js.CKR_USER_ALREADY_LOGGED_IN, 'CKR_USER_ALREADY_LOGGED_IN'],
    [pkcs11js.CKR_DEVICE_REMOVED, 'CKR_DEVICE_REMOVED'],
    [pkcs11js.CKR_OK, 'CKR_OK'],
    [CKR_AEAD_DECRYPT_FAILED, 'CKR_AEAD_DECRYPT_FAILED'],
    [0x80000001, 'CKR_VENDOR_DEFINED (0x80000001)'],
    [0x7777, 'CKR 0x00007777'],
  ])('%i is %s', (value, name) => {
    expect(ckrName(value)).toBe(name);
  });

  it('every CKR_ constant of the binding names itself', () => {
    const constants = Object.entries(pkcs11js).filter(([name]) => name.startsWith('CKR_'));
    expect(constants.length).toBeGreaterThan(80);
    for (const [name, value] of constants) expect(ckrName(value as number)).toBe(name);
  });

  it.each([
    [failure(pkcs11js.CKR_DEVICE_ERROR, 'C_Encrypt'), 'CKR_DEVICE_ERROR from C_Encrypt'],
    [failure(pkcs11js.CKR_TOKEN_NOT_PRESENT), 'CKR_TOKEN_NOT_PRESENT'],
    // The loader's own words (no CK_RV to go by) and the thread's own checks are shown as they are.
    [new Error('/x/lib.so: cannot open shared object file'), '/x/lib.so: cannot open shared object file'],
    [new Error('the HSM no longer holds KEK 0011'), 'the HSM no longer holds KEK 0011'],
    ['a thrown string', 'unknown error'],
  ])('%#: described as %s', (err, described) => {
    expect(describeHsmFailure(err)).toBe(described);
  });

  it('classifies on the number only', () => {
    expect(ckrOf(failure(pkcs11js.CKR_PIN_INCORRECT))).toBe(pkcs11js.CKR_PIN_INCORRECT);
    expect(ckrOf(new Error('CKR_PIN_INCORRECT:160'))).toBeUndefined();
  });
});
