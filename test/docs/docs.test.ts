import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors/codes.js';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config/load.js';
import { SETTINGS, envName, flagName } from '../../src/config/settings.js';
import { UNAUTHORIZED_REASONS } from '../../src/anomalies/record.js';
import { ANOMALY_KINDS } from '../../src/limits/anomaly-model.js';
import { NODE_FLOORS } from '../../src/cli/node-support.js';
import { SHARED_SCHEMAS } from '../../src/api/schemas.js';

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

  it('the README configuration table lists every setting with its flag, variable, default and whether it is secret', () => {
    const readme = read('README.md');
    for (const spec of SETTINGS) {
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${spec.name}\` |`));
      expect(row, spec.name).toBeDefined();
      expect(row).toContain(`\`${flagName(spec.name)}\``);
      expect(row).toContain(`\`${envName(spec.name)}\``);
      if ('default' in spec) expect(row).toContain(`\`${String(spec.default)}\``);
      // A reader deciding where to put a value needs to know which ones are kept out of the output.
      expect(row?.includes('Secret: never printed.'), spec.name).toBe('secret' in spec && spec.secret);
    }
  });

  it('docs/api.md shows each object it gives an example of with exactly the fields the API returns', () => {
    const doc = read('docs/api.md');
    const schemas = SHARED_SCHEMAS as readonly { $id: string; properties?: Record<string, unknown> }[];
    const fields = (id: string) => Object.keys(schemas.find((c) => c.$id === id)?.properties ?? {}).sort();
    // An example is known by its id field (and a created token by its sanitized_key).
    const byFirstField: Record<string, string> = {
      token_id: 'Token',
      key_id: 'Key',
      account_id: 'Account',
      request_id: 'RequestLog',
      anomaly_id: 'Anomaly',
    };
    let checked = 0;
    for (const [, block] of doc.matchAll(/```json\n([\s\S]*?)```/g)) {
      let example: Record<string, unknown>;
      try {
        example = JSON.parse(block ?? '') as Record<string, unknown>;
      } catch {
        continue; // a shape with "…" where a list's items go, not an object example
      }
      const first = Object.keys(example)[0] ?? '';
      let id = byFirstField[first];
      if (id === undefined) continue;
      if (id === 'Token' && 'sanitized_key' in example) id = 'CreatedToken';
      expect(Object.keys(example).sort(), `the ${id} example of docs/api.md`).toEqual(fields(id));
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(4);
  });

  it('user docs point at the project’s own pages, not at design notes outside the repository', () => {
    const files = ['README.md', 'clients/node/README.md', 'clients/python/README.md'];
    for (const name of readdirSync(new URL('../../docs/', import.meta.url))) {
      if (name.endsWith('.md')) files.push(`docs/${name}`);
    }
    for (const file of files) {
      const text = read(file);
      expect(text, file).not.toMatch(/\bDESIGN\b/);
      expect(text, file).not.toContain('../shared');
    }
  });

  it('tokenproxy.example.json loads with the real loader and sets every setting but the secrets, each explained in docs/operations.md', () => {
    const file = fileURLToPath(new URL('../../tokenproxy.example.json', import.meta.url));
    const config = loadConfig({ flags: {}, env: {}, configFile: file });
    const keys = Object.keys(JSON.parse(read('tokenproxy.example.json')) as object);
    const operations = read('docs/operations.md');
    for (const spec of SETTINGS) {
      const secret = 'secret' in spec && spec.secret;
      // Secrets belong in the environment, never in a file that is copied around.
      expect(keys.includes(spec.name), spec.name).toBe(!secret);
      if (!secret) expect(config.sources[spec.name], spec.name).toBe('file');
      expect(operations, spec.name).toContain(`\`${spec.name}\``);
      if (secret) expect(operations, spec.name).toContain(`\`${envName(spec.name)}\``);
    }
    expect(config.plans.free).toEqual({ activeTokens: 3, requestsPerMonth: 100_000 });
    expect(config.providers.map((p) => p.id)).toEqual(['mistral']);
  });

  it('ships the licence package.json declares', () => {
    const pkg = JSON.parse(read('package.json')) as { license: string };
    expect(pkg.license).toBe('MIT');
    expect(read('LICENSE')).toMatch(/^MIT License\n/);
  });

  it('the README names the Node.js lines CI tests, and the release each needs at least', () => {
    const readme = read('README.md');
    const tested = read('.ci/node-versions')
      .split('\n')
      .filter((line) => /^\d/.test(line))
      .map((line) => line.split('.')[0] ?? '');
    expect(tested.sort()).toEqual(['22', '24']);
    for (const major of tested) expect(readme).toMatch(new RegExp(`Node\\.js[^\\n]*\\b${major}\\b`));
    // package.json's engines is held to the same floors in test/cli/node-support.test.ts.
    expect(NODE_FLOORS.map(([major]) => String(major)).sort()).toEqual(tested.sort());
    for (const [major, minor] of NODE_FLOORS)
      expect(readme).toContain(`${major} (${major}.${minor} or later)`);
  });

  it('docs/api.md lists exactly the anomaly-log reasons the code writes, each with its kind', () => {
    const doc = read('docs/api.md');
    const section = doc.slice(doc.indexOf('### `GET /v1/anomalies`')).split('\n## ')[0] ?? '';
    const rows = [...section.matchAll(/^\| `(breach|anomaly)` \| `([a-z_]+)` \|/gm)].map(
      (m) => `${m[1]}:${m[2]}`,
    );
    const expected = [
      ...UNAUTHORIZED_REASONS.map((r) => `breach:${r}`),
      ...ANOMALY_KINDS.map((k) => `anomaly:${k}`),
    ];
    expect(rows.sort()).toEqual(expected.sort());
  });
});
