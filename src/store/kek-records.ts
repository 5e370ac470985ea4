/** Store types of the KEK versions (DESIGN §8) and the envelopes sealed under them. */

/** A KEK version as the store records it (DESIGN §8); nothing in it is secret. */
export interface KekVersion {
  /** The KEK's fingerprint as hex: the id every envelope sealed under it carries. */
  readonly id: string;
  readonly provider: string;
  readonly label: string | null;
  /** A vault envelope of a known plaintext sealed under this KEK. */
  readonly canary: Buffer;
  /**
   * The MAC keys inherited from the version this one replaced, as a vault envelope under this
   * version; null for a store's first version (its MAC keys derive from its KEK).
   */
  readonly macKeys: Buffer | null;
  readonly createdAt: string;
  readonly retiredAt: string | null;
}

export type NewKekVersion = Omit<KekVersion, 'retiredAt' | 'macKeys'> & { readonly macKeys?: Buffer | null };

/** One stored envelope with what the vault binds it to. */
export interface EnvelopeRef {
  readonly table: 'provider_keys' | 'webhooks' | 'idempotency_keys';
  /** The vault binding's keyId (the row's id, or `idempotency:<key>`). */
  readonly keyId: string;
  readonly accountId: string;
  readonly envelope: Buffer;
}

export interface KekRepo {
  /** Every recorded KEK version, oldest first, retired ones included. */
  list(): Promise<readonly KekVersion[]>;
  /**
   * Records a version; false when it was already recorded, or (with `onlyIfNone`) when any version
   * is. `onlyIfNone` is atomic across processes: of two first starts, one registers its KEK.
   */
  add(version: NewKekVersion, options?: { onlyIfNone?: boolean }): Promise<boolean>;
  /** Marks a version retired (no envelope uses it any more). */
  retire(id: string, at: string): Promise<void>;
  /** How many live envelopes each KEK id wraps, over every table holding envelopes. */
  envelopeCounts(): Promise<ReadonlyMap<string, number>>;
  /** A live provider-key or webhook envelope sealed under `kekId`, to test a KEK against. */
  sampleEnvelope(kekId: string): Promise<EnvelopeRef | undefined>;
  /** Up to `limit` live envelopes of any table sealed under `kekId` (a batch for `kek rotate`). */
  envelopesUnder(kekId: string, limit: number): Promise<readonly EnvelopeRef[]>;
  /**
   * Replaces one envelope by its rewrapped form, only if the row still holds `ref.envelope` (a key
   * rotated or deleted meanwhile is left as it is). Returns whether it was replaced.
   */
  replaceEnvelope(ref: EnvelopeRef, rewrapped: Buffer): Promise<boolean>;
  /** Pushes the envelopes replaced by rewrapping out of the live files (PostgreSQL: VACUUM FULL). */
  purgeDead(): Promise<void>;
}
