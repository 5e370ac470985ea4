import {
  createHmac,
  createCipheriv,
  createDecipheriv,
  createHash,
  createSecretKey,
  randomBytes,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';

/**
 * Envelope encryption of provider keys (DESIGN §8): every key gets its own data key (DEK), and only
 * the wrapped DEK ever touches the key-encryption key (KEK). A KEK provider (local file, PKCS#11)
 * only has to wrap and unwrap 32 bytes; this module owns the envelope format.
 *
 * Envelope layout, version 1 (all offsets in bytes, lengths fixed except the data ciphertext):
 *
 *   offset  length  field
 *   0       1       version = 0x01
 *   1       8       KEK fingerprint: first 8 bytes of SHA-256(KEK)
 *   9       12      wrap nonce (random)
 *   21      32      wrapped DEK: AES-256-GCM(KEK, wrap nonce, DEK, wrap AAD)
 *   53      16      wrap tag
 *   69      12      data nonce (random)
 *   81      n       data ciphertext: AES-256-GCM(DEK, data nonce, plaintext, data AAD), n = plaintext length
 *   81+n    16      data tag
 *
 * AADs (strings UTF-8, lengths u32be so no two bindings encode alike):
 *   wrap AAD = "tokenproxy/vault/v1/dek-wrap" || version || KEK fingerprint || len(keyId) || keyId
 *              || len(accountId) || accountId
 *   data AAD = "tokenproxy/vault/v1/data" || len(keyId) || keyId || len(accountId) || accountId
 * So every byte of the envelope is authenticated, and the per-purpose labels keep a wrapped DEK from
 * ever being accepted as data or the reverse. The fingerprint is both authenticated and compared in
 * the clear: only the comparison can say "wrong KEK" instead of "tampered".
 */

export interface KeyBinding {
  readonly keyId: string;
  readonly accountId: string;
}

export interface Vault {
  /** Fingerprint of the KEK in use (non-secret: first 8 bytes of SHA-256(KEK) as hex), for logs and errors. */
  readonly kekId: string;
  /**
   * Returns the envelope to store. Asynchronous because a KEK in an HSM answers from another thread;
   * rejects with VaultError('kek_unavailable') when the KEK cannot be reached.
   */
  encrypt(plaintext: Buffer, binding: KeyBinding): Promise<Buffer>;
  /** The CALLER zeroes the returned Buffer (`buf.fill(0)`) when done with it. */
  decrypt(envelope: Buffer, binding: KeyBinding): Promise<Buffer>;
  /**
   * HMAC-SHA256 (hex) of `data` under a key derived from the KEK for `purpose`: a digest that can be
   * stored and compared, but not recomputed by someone who only has the database (e.g. to confirm a
   * guessed provider key inside a request fingerprint).
   */
  mac(purpose: string, data: string): Promise<string>;
  /** True when the KEK answers now (an HSM round trip); always true for a local KEK. For /readyz. */
  healthy(): Promise<boolean>;
  /** Releases the KEK provider (the HSM thread). */
  close(): Promise<void>;
}

/** `kek_unavailable`: the KEK could not be used at all (an HSM that fails); nothing was learned about the envelope. */
export type VaultErrorCode =
  'tampered' | 'wrong_kek' | 'unsupported_version' | 'malformed' | 'kek_unavailable';

/** Messages name what failed and the KEK fingerprints at most: never key material or plaintext. */
export class VaultError extends Error {
  readonly code: VaultErrorCode;

  constructor(code: VaultErrorCode, message: string) {
    super(message);
    this.name = 'VaultError';
    this.code = code;
  }
}

export function isVaultError(err: unknown): err is VaultError {
  return err instanceof VaultError;
}

export const ENVELOPE_VERSION = 1;

const KEY_LEN = 32;
const NONCE_LEN = 12;
const TAG_LEN = 16;
const KEK_FP_LEN = 8;
const ALGORITHM = 'aes-256-gcm';

const OFF_VERSION = 0;
const OFF_KEK_FP = OFF_VERSION + 1;
const OFF_WRAP_NONCE = OFF_KEK_FP + KEK_FP_LEN;
const OFF_WRAPPED_DEK = OFF_WRAP_NONCE + NONCE_LEN;
const OFF_WRAP_TAG = OFF_WRAPPED_DEK + KEY_LEN;
const OFF_DATA_NONCE = OFF_WRAP_TAG + TAG_LEN;
const OFF_DATA = OFF_DATA_NONCE + NONCE_LEN;
/** An envelope of an empty plaintext; anything shorter cannot be version 1. */
export const MIN_ENVELOPE_LENGTH = OFF_DATA + TAG_LEN;

const WRAP_LABEL = 'tokenproxy/vault/v1/dek-wrap';
const DATA_LABEL = 'tokenproxy/vault/v1/data';

export function kekFingerprint(kek: Buffer): Buffer {
  return createHash('sha256').update(kek).digest().subarray(0, KEK_FP_LEN);
}

/**
 * The id of the KEK an envelope was sealed under (its fingerprint as hex), read from the header
 * without opening anything; null for what is not a version-1 envelope. The store keeps it beside
 * each envelope so a start and `kek rotate` can tell which KEK versions are in use.
 */
export function envelopeKekId(envelope: Buffer): string | null {
  if (envelope.length < MIN_ENVELOPE_LENGTH || envelope[OFF_VERSION] !== ENVELOPE_VERSION) return null;
  return envelope.subarray(OFF_KEK_FP, OFF_WRAP_NONCE).toString('hex');
}

/** Built in one buffer: it runs twice per proxied request, and concatenating parts cost ~1 µs each time. */
function bindingAad(label: string, binding: KeyBinding, header?: Buffer): Buffer {
  const labelLength = Buffer.byteLength(label, 'utf8');
  const keyIdLength = Buffer.byteLength(binding.keyId, 'utf8');
  const accountIdLength = Buffer.byteLength(binding.accountId, 'utf8');
  const headerLength = header === undefined ? 0 : header.length;
  const aad = Buffer.allocUnsafe(labelLength + headerLength + 8 + keyIdLength + accountIdLength);
  let at = aad.write(label, 0, 'utf8');
  if (header !== undefined) at += header.copy(aad, at);
  at = aad.writeUInt32BE(keyIdLength, at);
  at += aad.write(binding.keyId, at, 'utf8');
  at = aad.writeUInt32BE(accountIdLength, at);
  aad.write(binding.accountId, at, 'utf8');
  return aad;
}

function checkBinding(binding: KeyBinding): void {
  // An empty id would make every such record share one binding, silently voiding the AAD's purpose.
  if (typeof binding.keyId !== 'string' || binding.keyId === '') {
    throw new TypeError('vault binding needs a non-empty keyId');
  }
  if (typeof binding.accountId !== 'string' || binding.accountId === '') {
    throw new TypeError('vault binding needs a non-empty accountId');
  }
}

/**
 * Keys are KeyObjects, never raw Buffers: on Node 24 every cipher built from a Buffer key first asks
 * whether it is a WebCrypto key by catching a thrown error (`isCryptoKey` in lib/internal/crypto/keys),
 * ~10-13 µs per cipher, against ~1.5 µs to make a KeyObject (docs/performance.md, round four). A
 * KeyObject's native copy is wiped by OpenSSL when it is collected, as the cipher context is.
 */
function seal(key: KeyObject, nonce: Buffer, plaintext: Buffer, aad: Buffer): [Buffer, Buffer] {
  const cipher = createCipheriv(ALGORITHM, key, nonce, { authTagLength: TAG_LEN });
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return [ciphertext, cipher.getAuthTag()];
}

/**
 * Returns the plaintext, or undefined when authentication fails. GCM hands out plaintext before it
 * checks the tag, so that unauthenticated output is zeroed here rather than left in memory.
 */
function open(
  key: KeyObject,
  nonce: Buffer,
  ciphertext: Buffer,
  tag: Buffer,
  aad: Buffer,
): Buffer | undefined {
  const decipher = createDecipheriv(ALGORITHM, key, nonce, { authTagLength: TAG_LEN });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  const plaintext = decipher.update(ciphertext);
  try {
    // GCM emits everything from update(); final() only verifies the tag and returns nothing.
    decipher.final();
    return plaintext;
  } catch {
    plaintext.fill(0);
    return undefined;
  }
}

/**
 * What a KEK provider supplies: AES-256-GCM wrapping of a 32-byte DEK under a key it holds. A local
 * provider does this in process; a PKCS#11 provider does it inside the HSM, so the KEK never leaves.
 */
export interface KeyEncryptionKey {
  /** First 8 bytes of SHA-256(KEK) (or another stable non-secret id of the same length). */
  readonly fingerprint: Buffer;
  /**
   * Returns nonce (12) || ciphertext (32) || tag (16), with a fresh random nonce. Rejects with
   * VaultError('kek_unavailable') when the KEK cannot be reached.
   */
  wrap(dek: Buffer, aad: Buffer): Promise<Buffer>;
  /** Returns the DEK, or undefined when authentication fails. The vault zeroes the result. */
  unwrap(wrapped: Buffer, aad: Buffer): Promise<Buffer | undefined>;
  /** A 32-byte key for `purpose`, derived from the KEK (a KDF); never the KEK itself. */
  deriveKey(purpose: string): Promise<Buffer>;
  healthy?(): Promise<boolean>;
  close?(): Promise<void>;
}

export const WRAPPED_DEK_LENGTH = NONCE_LEN + KEY_LEN + TAG_LEN;
export const KEK_FINGERPRINT_LENGTH = KEK_FP_LEN;

/** AES-256-GCM wrap with the node:crypto primitives, for KEK providers that hold the key in process. */
export function gcmWrap(key: KeyObject, dek: Buffer, aad: Buffer): Buffer {
  const nonce = randomBytes(NONCE_LEN);
  const [ciphertext, tag] = seal(key, nonce, dek, aad);
  return Buffer.concat([nonce, ciphertext, tag]);
}

export function gcmUnwrap(key: KeyObject, wrapped: Buffer, aad: Buffer): Buffer | undefined {
  if (wrapped.length !== WRAPPED_DEK_LENGTH) return undefined;
  return open(
    key,
    wrapped.subarray(0, NONCE_LEN),
    wrapped.subarray(NONCE_LEN, NONCE_LEN + KEY_LEN),
    wrapped.subarray(NONCE_LEN + KEY_LEN),
    aad,
  );
}

/**
 * Moves an envelope from one KEK to another without touching its data: the DEK is unwrapped under
 * `from` and wrapped under `to`, and the data nonce, ciphertext and tag are kept byte for byte. What
 * `kek rotate` and `kek migrate` do to every stored envelope. Throws VaultError like decrypt.
 */
export async function rewrapEnvelope(
  envelope: Buffer,
  binding: KeyBinding,
  from: KeyEncryptionKey,
  to: KeyEncryptionKey,
): Promise<Buffer> {
  checkBinding(binding);
  if (envelope.length < MIN_ENVELOPE_LENGTH || envelope[OFF_VERSION] !== ENVELOPE_VERSION) {
    throw new VaultError('malformed', 'not a version 1 envelope');
  }
  const fromHeader = Buffer.concat([Buffer.from([ENVELOPE_VERSION]), from.fingerprint]);
  if (!envelope.subarray(OFF_VERSION, OFF_WRAP_NONCE).equals(fromHeader)) {
    throw new VaultError('wrong_kek', `envelope is not sealed under KEK ${from.fingerprint.toString('hex')}`);
  }
  const toHeader = Buffer.concat([Buffer.from([ENVELOPE_VERSION]), to.fingerprint]);
  const dek = await from.unwrap(
    envelope.subarray(OFF_WRAP_NONCE, OFF_DATA_NONCE),
    bindingAad(WRAP_LABEL, binding, fromHeader),
  );
  if (dek === undefined) throw new VaultError('tampered', TAMPERED);
  try {
    const wrapped = await to.wrap(dek, bindingAad(WRAP_LABEL, binding, toHeader));
    if (wrapped.length !== WRAPPED_DEK_LENGTH) {
      throw new Error(`the KEK provider returned a ${wrapped.length}-byte wrapped DEK`);
    }
    return Buffer.concat([toHeader, wrapped, envelope.subarray(OFF_DATA_NONCE)]);
  } finally {
    dek.fill(0);
  }
}

const TAMPERED = 'envelope failed authentication: it was altered, or it belongs to another key or account';

export function createEnvelopeVault(kek: KeyEncryptionKey): Vault {
  if (kek.fingerprint.length !== KEK_FP_LEN) {
    throw new TypeError(`a KEK fingerprint must be ${KEK_FP_LEN} bytes`);
  }
  const fingerprint = Buffer.from(kek.fingerprint);
  const kekId = fingerprint.toString('hex');
  const macKeys = new Map<string, Buffer>();
  const header = Buffer.concat([Buffer.from([ENVELOPE_VERSION]), fingerprint]);

  return {
    kekId,

    healthy: () => kek.healthy?.() ?? Promise.resolve(true),

    close: () => kek.close?.() ?? Promise.resolve(),

    async mac(purpose: string, data: string): Promise<string> {
      let key = macKeys.get(purpose);
      if (key === undefined) {
        key = await kek.deriveKey(purpose);
        macKeys.set(purpose, key);
      }
      return createHmac('sha256', key).update(data, 'utf8').digest('hex');
    },

    async encrypt(plaintext: Buffer, binding: KeyBinding): Promise<Buffer> {
      checkBinding(binding);
      const dek = randomBytes(KEY_LEN);
      try {
        const wrapped = await kek.wrap(dek, bindingAad(WRAP_LABEL, binding, header));
        if (wrapped.length !== WRAPPED_DEK_LENGTH) {
          throw new Error(`the KEK provider returned a ${wrapped.length}-byte wrapped DEK`);
        }
        const dataNonce = randomBytes(NONCE_LEN);
        const [ciphertext, dataTag] = seal(
          createSecretKey(dek),
          dataNonce,
          plaintext,
          bindingAad(DATA_LABEL, binding),
        );
        return Buffer.concat([header, wrapped, dataNonce, ciphertext, dataTag]);
      } finally {
        dek.fill(0);
      }
    },

    async decrypt(envelope: Buffer, binding: KeyBinding): Promise<Buffer> {
      checkBinding(binding);
      if (!Buffer.isBuffer(envelope) || envelope.length === 0) {
        throw new VaultError('malformed', 'envelope is empty');
      }
      const version = envelope[OFF_VERSION];
      if (version !== ENVELOPE_VERSION) {
        throw new VaultError(
          'unsupported_version',
          `envelope version ${String(version)} is not supported (this build reads version ${ENVELOPE_VERSION})`,
        );
      }
      if (envelope.length < MIN_ENVELOPE_LENGTH) {
        throw new VaultError(
          'malformed',
          `envelope is ${envelope.length} bytes, shorter than the ${MIN_ENVELOPE_LENGTH} of a version ${ENVELOPE_VERSION} envelope`,
        );
      }

      const storedFp = envelope.subarray(OFF_KEK_FP, OFF_WRAP_NONCE);
      const wrapped = envelope.subarray(OFF_WRAP_NONCE, OFF_DATA_NONCE);
      const dataNonce = envelope.subarray(OFF_DATA_NONCE, OFF_DATA);
      const ciphertext = envelope.subarray(OFF_DATA, envelope.length - TAG_LEN);
      const dataTag = envelope.subarray(envelope.length - TAG_LEN);

      // The AAD uses this vault's own header, not the stored one: an envelope whose fingerprint
      // differs only because bits flipped still unwraps, which tells tampering apart from a wrong KEK.
      const dek = await kek.unwrap(wrapped, bindingAad(WRAP_LABEL, binding, header));
      const fpMatches = timingSafeEqual(storedFp, fingerprint);
      if (dek === undefined) {
        if (!fpMatches) {
          throw new VaultError(
            'wrong_kek',
            `envelope was sealed under KEK ${storedFp.toString('hex')}, this vault holds KEK ${kekId}`,
          );
        }
        throw new VaultError('tampered', TAMPERED);
      }
      try {
        if (!fpMatches || dek.length !== KEY_LEN) throw new VaultError('tampered', TAMPERED);
        const plaintext = open(
          createSecretKey(dek),
          dataNonce,
          ciphertext,
          dataTag,
          bindingAad(DATA_LABEL, binding),
        );
        if (plaintext === undefined) throw new VaultError('tampered', TAMPERED);
        return plaintext;
      } finally {
        dek.fill(0);
      }
    },
  };
}
