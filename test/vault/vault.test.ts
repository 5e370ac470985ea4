import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createLocalVault } from '../../src/vault/local-kek.js';
import {
  ENVELOPE_VERSION,
  MIN_ENVELOPE_LENGTH,
  VaultError,
  type KeyBinding,
  type VaultErrorCode,
} from '../../src/vault/vault.js';

const KEK = randomBytes(32);
const BINDING: KeyBinding = { keyId: 'key_5Hd8kLmN2pQrStUvWxYz1a', accountId: 'acct_9aBcDeFgHiJkLmNoPqRsTu' };
const SECRET = Buffer.from('sk-proj-THIS-IS-THE-REAL-PROVIDER-KEY-0123456789abcdef', 'utf8');

async function expectVaultError(fn: () => Promise<unknown>, code: VaultErrorCode): Promise<VaultError> {
  try {
    await fn();
  } catch (err) {
    expect(err).toBeInstanceOf(VaultError);
    const vaultError = err as VaultError;
    expect(vaultError.code).toBe(code);
    // Nothing secret may leak through the message.
    expect(vaultError.message).not.toContain(SECRET.toString('utf8'));
    expect(vaultError.message).not.toContain(KEK.toString('hex'));
    expect(vaultError.message).not.toContain(KEK.toString('base64'));
    return vaultError;
  }
  throw new Error(`expected VaultError ${code}, but decrypt succeeded`);
}

function flipBit(buf: Buffer, offset: number, bit = 0): Buffer {
  const copy = Buffer.from(buf);
  copy[offset] = (copy[offset] ?? 0) ^ (1 << bit);
  return copy;
}

const LOCAL = createLocalVault(KEK);
const ENVELOPE = await LOCAL.encrypt(SECRET, BINDING);

describe('local vault', () => {
  const vault = LOCAL;
  const envelope = ENVELOPE;

  it('round-trips', async () => {
    const plain = await vault.decrypt(envelope, BINDING);
    expect(plain.equals(SECRET)).toBe(true);
  });

  it('round-trips an empty and a large plaintext', async () => {
    for (const plaintext of [Buffer.alloc(0), randomBytes(100_000)]) {
      const sealed = await vault.encrypt(plaintext, BINDING);
      expect(sealed.length).toBe(MIN_ENVELOPE_LENGTH + plaintext.length);
      expect((await vault.decrypt(sealed, BINDING)).equals(plaintext)).toBe(true);
    }
  });

  it('works across vault instances with the same KEK (a restart)', async () => {
    const again = createLocalVault(Buffer.from(KEK));
    expect(again.kekId).toBe(vault.kekId);
    expect((await again.decrypt(envelope, BINDING)).equals(SECRET)).toBe(true);
  });

  it('has a non-secret 16-hex-digit kekId', () => {
    expect(vault.kekId).toMatch(/^[0-9a-f]{16}$/);
    expect(KEK.toString('hex')).not.toContain(vault.kekId);
  });

  it('starts with the version byte and the KEK fingerprint', () => {
    expect(envelope[0]).toBe(ENVELOPE_VERSION);
    expect(envelope.subarray(1, 9).toString('hex')).toBe(vault.kekId);
    expect(envelope.length).toBe(MIN_ENVELOPE_LENGTH + SECRET.length);
  });

  it('gives two different envelopes for the same key', async () => {
    const a = await vault.encrypt(SECRET, BINDING);
    const b = await vault.encrypt(SECRET, BINDING);
    expect(a.equals(b)).toBe(false);
    // Fresh nonces and DEK: everything after the header differs.
    expect(a.subarray(9, 21).equals(b.subarray(9, 21))).toBe(false);
    expect(a.subarray(21, 53).equals(b.subarray(21, 53))).toBe(false);
    expect(a.subarray(69, 81).equals(b.subarray(69, 81))).toBe(false);
    expect(a.subarray(81, 81 + SECRET.length).equals(b.subarray(81, 81 + SECRET.length))).toBe(false);
  });

  it('never stores the plaintext bytes', () => {
    const secretHex = SECRET.toString('hex');
    expect(envelope.includes(SECRET)).toBe(false);
    expect(envelope.toString('hex')).not.toContain(secretHex);
    expect(envelope.toString('base64')).not.toContain(SECRET.toString('base64').slice(0, 16));
    // Not even an 8-byte window of it.
    for (let i = 0; i + 8 <= SECRET.length; i++) {
      expect(envelope.includes(SECRET.subarray(i, i + 8))).toBe(false);
    }
  });

  it('returns a fresh Buffer the caller can zero without harming the envelope or later decrypts', async () => {
    const plain = await vault.decrypt(envelope, BINDING);
    expect(Buffer.isBuffer(plain)).toBe(true);
    plain.fill(0);
    expect(plain.every((b) => b === 0)).toBe(true);
    expect((await vault.decrypt(envelope, BINDING)).equals(SECRET)).toBe(true);
  });

  it('does not keep a reference to the caller’s KEK buffer', async () => {
    const kek = randomBytes(32);
    const own = createLocalVault(kek);
    const sealed = await own.encrypt(SECRET, BINDING);
    const copy = Buffer.from(kek);
    kek.fill(0);
    expect((await own.decrypt(sealed, BINDING)).equals(SECRET)).toBe(true);
    expect((await createLocalVault(copy).decrypt(sealed, BINDING)).equals(SECRET)).toBe(true);
  });

  describe('tampering', () => {
    const dataEnd = envelope.length - 16;
    const regions: { name: string; offsets: number[]; code: VaultErrorCode }[] = [
      { name: 'version byte', offsets: [0], code: 'unsupported_version' },
      { name: 'KEK fingerprint', offsets: [1, 4, 8], code: 'tampered' },
      { name: 'wrap nonce', offsets: [9, 15, 20], code: 'tampered' },
      { name: 'wrapped DEK', offsets: [21, 37, 52], code: 'tampered' },
      { name: 'wrap tag', offsets: [53, 60, 68], code: 'tampered' },
      { name: 'data nonce', offsets: [69, 75, 80], code: 'tampered' },
      { name: 'data ciphertext', offsets: [81, 90, dataEnd - 1], code: 'tampered' },
      { name: 'data tag', offsets: [dataEnd, dataEnd + 8, envelope.length - 1], code: 'tampered' },
    ];

    it.each(regions)('a flipped bit in the $name fails with $code', async ({ offsets, code }) => {
      for (const offset of offsets) {
        for (const bit of [0, 7]) {
          await expectVaultError(async () => vault.decrypt(flipBit(envelope, offset, bit), BINDING), code);
        }
      }
    });

    it('every single flipped bit anywhere fails, never returning data', async () => {
      for (let offset = 0; offset < envelope.length; offset++) {
        for (let bit = 0; bit < 8; bit++) {
          await expect(vault.decrypt(flipBit(envelope, offset, bit), BINDING)).rejects.toThrow(VaultError);
        }
      }
    });

    it.each([
      { name: 'empty', mutate: () => Buffer.alloc(0), code: 'malformed' as const },
      { name: 'only the version byte', mutate: () => envelope.subarray(0, 1), code: 'malformed' as const },
      { name: 'cut inside the header', mutate: () => envelope.subarray(0, 40), code: 'malformed' as const },
      {
        name: 'one byte short of the minimum',
        mutate: () => envelope.subarray(0, MIN_ENVELOPE_LENGTH - 1),
        code: 'malformed' as const,
      },
      { name: 'missing the last byte', mutate: () => envelope.subarray(0, -1), code: 'tampered' as const },
      { name: 'missing the tag', mutate: () => envelope.subarray(0, -16), code: 'tampered' as const },
      {
        name: 'extended by a zero byte',
        mutate: () => Buffer.concat([envelope, Buffer.alloc(1)]),
        code: 'tampered' as const,
      },
      {
        name: 'extended by 64 random bytes',
        mutate: () => Buffer.concat([envelope, randomBytes(64)]),
        code: 'tampered' as const,
      },
      {
        name: 'version byte 2',
        mutate: () => Buffer.concat([Buffer.from([2]), envelope.subarray(1)]),
        code: 'unsupported_version' as const,
      },
      {
        name: 'version byte 0',
        mutate: () => Buffer.concat([Buffer.from([0]), envelope.subarray(1)]),
        code: 'unsupported_version' as const,
      },
      {
        name: 'short with an unknown version',
        mutate: () => Buffer.from([2, 0, 0]),
        code: 'unsupported_version' as const,
      },
      {
        name: 'the data part of another envelope',
        mutate: async () => {
          const other = await vault.encrypt(SECRET, BINDING);
          return Buffer.concat([envelope.subarray(0, 69), other.subarray(69)]);
        },
        code: 'tampered' as const,
      },
      {
        name: 'all zeroes after the version byte',
        mutate: () => Buffer.concat([Buffer.from([1]), Buffer.alloc(envelope.length - 1)]),
        code: 'wrong_kek' as const,
      },
    ])('$name fails with $code', async ({ mutate, code }) => {
      await expectVaultError(async () => vault.decrypt(await mutate(), BINDING), code);
    });
  });

  describe('binding', () => {
    it.each([
      { name: 'another key id', binding: { ...BINDING, keyId: 'key_OtherKeyAAAAAAAAAAAAAA' } },
      { name: 'another account id', binding: { ...BINDING, accountId: 'acct_OtherAccountAAAAAAAAA' } },
      { name: 'both swapped', binding: { keyId: BINDING.accountId, accountId: BINDING.keyId } },
      {
        name: 'the same bytes split differently',
        binding: {
          keyId: BINDING.keyId + BINDING.accountId.slice(0, 4),
          accountId: BINDING.accountId.slice(4),
        },
      },
    ])('an envelope moved to $name fails as tampered', async ({ binding }) => {
      const err = await expectVaultError(async () => vault.decrypt(envelope, binding), 'tampered');
      expect(err.message).toMatch(/another key or account/);
    });

    it('refuses empty ids', async () => {
      await expect(vault.encrypt(SECRET, { keyId: '', accountId: BINDING.accountId })).rejects.toThrow(
        TypeError,
      );
      await expect(vault.decrypt(envelope, { keyId: BINDING.keyId, accountId: '' })).rejects.toThrow(
        TypeError,
      );
    });
  });

  describe('KEK', () => {
    it('reports a wrong KEK as such, naming both fingerprints', async () => {
      const other = createLocalVault(randomBytes(32));
      expect(other.kekId).not.toBe(vault.kekId);
      const err = await expectVaultError(async () => other.decrypt(envelope, BINDING), 'wrong_kek');
      expect(err.message).toContain(vault.kekId);
      expect(err.message).toContain(other.kekId);
    });

    it('reports a wrong KEK even when the binding is also wrong', async () => {
      const other = createLocalVault(randomBytes(32));
      await expectVaultError(
        async () => other.decrypt(envelope, { ...BINDING, keyId: 'key_x' }),
        'wrong_kek',
      );
    });

    it('refuses a KEK that is not 32 bytes', () => {
      expect(() => createLocalVault(randomBytes(16))).toThrow(/32 bytes/);
      expect(() => createLocalVault(Buffer.alloc(0))).toThrow(/32 bytes/);
    });
  });
});

describe('envelope format, version 1', () => {
  /** The layout documented in src/vault/vault.ts, built with node:crypto alone. */
  function handMadeEnvelope(kek: Buffer, plaintext: Buffer, binding: KeyBinding): Buffer {
    const u32 = (n: number): Buffer => {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(n);
      return b;
    };
    const text = (value: string): Buffer => Buffer.from(value, 'utf8');
    const seal = (key: Buffer, nonce: Buffer, data: Buffer, aad: Buffer): Buffer[] => {
      const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 });
      cipher.setAAD(aad);
      return [cipher.update(data), cipher.final(), cipher.getAuthTag()];
    };
    const fingerprint = createHash('sha256').update(kek).digest().subarray(0, 8);
    const ids = Buffer.concat([
      u32(text(binding.keyId).length),
      text(binding.keyId),
      u32(text(binding.accountId).length),
      text(binding.accountId),
    ]);
    const wrapAad = Buffer.concat([text('tokenproxy/vault/v1/dek-wrap'), Buffer.from([1]), fingerprint, ids]);
    const dataAad = Buffer.concat([text('tokenproxy/vault/v1/data'), ids]);
    const dek = Buffer.alloc(32, 0x5a);
    const wrapNonce = Buffer.alloc(12, 1);
    const dataNonce = Buffer.alloc(12, 2);
    return Buffer.concat([
      Buffer.from([1]),
      fingerprint,
      wrapNonce,
      ...seal(kek, wrapNonce, dek, wrapAad),
      dataNonce,
      ...seal(dek, dataNonce, plaintext, dataAad),
    ]);
  }

  it.each([
    ['ASCII ids', BINDING],
    ['non-ASCII ids (lengths are bytes, not characters)', { keyId: 'key_é€😀', accountId: 'acct_ß' }],
  ])('opens an envelope made by hand from the documented layout, with %s', async (_name, binding) => {
    // Keys stored by earlier builds must stay readable: this pins the format, not just the round trip.
    const envelope = handMadeEnvelope(KEK, SECRET, binding);
    expect((await createLocalVault(KEK).decrypt(envelope, binding)).equals(SECRET)).toBe(true);
    await expectVaultError(
      () => createLocalVault(KEK).decrypt(envelope, { ...binding, keyId: `${binding.keyId}x` }),
      'tampered',
    );
  });
});

describe('vault.mac', () => {
  it('is a keyed digest: stable per KEK and purpose, different across KEKs and purposes, not a plain hash', async () => {
    const kek = randomBytes(32);
    const a = createLocalVault(kek);
    const b = createLocalVault(Buffer.from(kek));
    const other = createLocalVault(randomBytes(32));
    const data = 'POST /v1/keys\n{"real_key":"sk-guess"}';
    expect(await a.mac('idempotency-fingerprint', data)).toMatch(/^[0-9a-f]{64}$/);
    expect(await a.mac('idempotency-fingerprint', data)).toBe(await b.mac('idempotency-fingerprint', data));
    expect(await a.mac('idempotency-fingerprint', data)).not.toBe(
      await other.mac('idempotency-fingerprint', data),
    );
    expect(await a.mac('idempotency-fingerprint', data)).not.toBe(await a.mac('another-purpose', data));
    expect(await a.mac('idempotency-fingerprint', data)).not.toBe(
      createHash('sha256').update(data).digest('hex'),
    );
  });
});
