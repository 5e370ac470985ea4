import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { distinctive, leaks } from './secrets-scan.js';

/** Secrets stay secret: see secrets-scan.ts for what is looked for and how. */

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`secrets stay secret (${fixture.name})`, () => {
    it('has a scanner that finds a secret in every encoding it checks, at any alignment', () => {
      const secret = distinctive('SCANNER');
      for (let pad = 0; pad < 4; pad++) {
        const noise = randomBytes(pad + 5);
        const inside = Buffer.concat([noise, Buffer.from(secret), noise]);
        for (const encoding of ['base64', 'base64url', 'hex'] as const) {
          expect(
            leaks(Buffer.from(`x${inside.toString(encoding)}y`), { secret }).length,
            `${encoding}+${pad}`,
          ).toBeGreaterThan(0);
        }
        expect(leaks(inside, { secret })).toContain('secret/utf8');
      }
      expect(leaks(Buffer.from(JSON.stringify({ k: secret.toUpperCase() })), { secret })).toEqual([]);
    });
  });
}
