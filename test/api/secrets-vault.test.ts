import { describe, expect, it } from 'vitest';
import { secretDigest } from '../../src/ids/formats.js';
import { startApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import { createToken, newClient, ok } from './helpers.js';
import { dataDirContents, distinctive, leaks, postgresDump } from './secrets-scan.js';

/** Secrets stay secret: see secrets-scan.ts for what is looked for and how. */

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`secrets stay secret (${fixture.name})`, () => {
    it('stores the real key only as ciphertext that the vault opens, and destroys it on key deletion', async () => {
      const h = await startApiHarness(fixture);
      try {
        const c = await newClient(h, 'unlimited', 'vault');
        const realKey = distinctive('VAULT');
        const t = await createToken(c, { real_key: realKey });
        const found = await h.store.tokens.findByDigest(secretDigest(t.sanitized_key));
        const ciphertext = found?.ciphertext ?? Buffer.alloc(0);
        expect(ciphertext.length).toBeGreaterThan(0);
        expect(leaks(ciphertext, { realKey })).toEqual([]);
        const plain = await h.vault.decrypt(ciphertext, { keyId: t.real_key_ref, accountId: c.accountId });
        expect(plain.toString('utf8')).toBe(realKey);
        plain.fill(0);
        // Bound to its key and account: another binding does not open it.
        await expect(
          h.vault.decrypt(ciphertext, { keyId: t.real_key_ref, accountId: h.accountId }),
        ).rejects.toThrow();

        ok(await c.request('DELETE', `/v1/keys/${t.real_key_ref}`));
        expect((await h.store.tokens.findByDigest(secretDigest(t.sanitized_key)))?.ciphertext).toBeNull();
        if (fixture.name === 'sqlite') {
          // secure_delete and the checkpoint leave no copy of the old ciphertext on disk.
          const files = await dataDirContents(h.db.dataDir);
          for (const { file, bytes } of files) expect(bytes.includes(ciphertext), file).toBe(false);
        } else {
          const dump = await postgresDump(h.db.database ?? '');
          expect(dump.includes(ciphertext)).toBe(false);
        }
      } finally {
        await h.close();
      }
    });
  });
}
