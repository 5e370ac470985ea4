import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors/codes.js';
import { SETTINGS, envName, flagName } from '../../src/config/settings.js';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

describe('docs stay in step with the code', () => {
  it('docs/errors.md documents every error code with its status and how to solve it', () => {
    const doc = read('docs/errors.md');
    for (const [code, spec] of Object.entries(ERROR_CODES)) {
      const heading = new RegExp(`^### \`${code}\` — ${spec.status}$`, 'm');
      expect(doc, code).toMatch(heading);
      const section = doc.slice(doc.search(heading)).split('\n### ')[0] ?? '';
      expect(section, code).toContain('**How to solve:**');
    }
    // And nothing documented that the code does not have.
    const documented = [...doc.matchAll(/^### `([a-z_]+)`/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it('the README configuration table lists every setting with its flag, variable and default', () => {
    const readme = read('README.md');
    for (const spec of SETTINGS) {
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${spec.name}\` |`));
      expect(row, spec.name).toBeDefined();
      expect(row).toContain(`\`${flagName(spec.name)}\``);
      expect(row).toContain(`\`${envName(spec.name)}\``);
      if ('default' in spec) expect(row).toContain(`\`${String(spec.default)}\``);
    }
  });
});
