/**
 * The provider keys the upgrade fixtures (test/fixtures/upgrade/) were made with. Test values, no
 * provider ever issued them. They are here, in the test code, and never in the fixture files: the
 * stores hold them only sealed (envelopes), which test/store/upgrade-fixtures.test.ts checks by
 * searching the fixtures for every encoding of them. scripts/make-upgrade-fixture.js imports this
 * file too (Node strips the types).
 */
export const UPGRADE_KEYS = {
  /** POST /v1/keys "shared", before its rotation. */
  sharedBeforeRotation: 'sk-upgrade-fixture-shared-v1-4Qm9Zt7Lx2Wc8Rb5Nd3Hk6Jp',
  /** What "shared" holds after POST /v1/keys/:id/rotate: the tokens made with key_id use it. */
  shared: 'sk-upgrade-fixture-shared-v2-8Vf3Kq1Ty6Gh4Ms9Xe2Dc7Lw',
  /** The key of the token made with real_key (a key resource of its own). */
  own: 'sk-upgrade-fixture-own-5Bn8Pr2Yj7Ca3Tz6Wq9Ef4Uh',
  /** The key of the revoked and the expired tokens. */
  other: 'sk-upgrade-fixture-other-3Ld7Xs1Gk9Mv5Rc2Hb8Np6Qt',
  /** POST /v1/keys sent with an Idempotency-Key. */
  idempotent: 'sk-upgrade-fixture-idem-6Hw2Jt9Ke4Pb7Sx1Fm5Zc3Ar',
} as const;
