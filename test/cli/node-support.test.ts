import { readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { NODE_FLOORS, nodeSupportProblem } from '../../src/cli/node-support.js';
import { BIN } from '../support/cli.js';

describe('nodeSupportProblem: which Node.js releases tokenproxy runs on', () => {
  it.each([
    ['20.20.2', false],
    ['22.14.0', false],
    ['22.19.9', false],
    ['22.20.0', true],
    ['22.23.5', true],
    ['23.11.0', false],
    ['24.0.0', false],
    ['24.6.0', false],
    ['24.7.0', true],
    ['24.22.3', true],
    ['25.9.0', true],
    ['26.12.1', true],
    ['v24.7.0', true],
    ['not-a-version', false],
  ])('%s: supported %s', (version, ok) => {
    const problem = nodeSupportProblem(version);
    if (ok) expect(problem).toBeUndefined();
    else {
      expect(problem).toContain(`this is Node.js ${version}`);
      expect(problem).toContain('22.20 or later on its line, or 24.7 or later');
      expect(problem).toContain('Install a current LTS release');
    }
  });

  it("says what package.json's engines says", () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      engines: { node: string };
    };
    const [first, second] = NODE_FLOORS.map(([major, minor]) => `${major}.${minor}.0`);
    expect(pkg.engines.node).toBe(`^${first} || >=${second}`);
  });
});

/** Runs bin/tokenproxy as if on Node `version` (process.versions.node is configurable). */
function binAs(
  version: string,
  args: string[],
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const pretend = `Object.defineProperty(process.versions, 'node', { value: ${JSON.stringify(version)} });`;
  const child = spawn(process.execPath, [
    '--import',
    `data:text/javascript,${encodeURIComponent(pretend)}`,
    BIN,
    ...args,
  ]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr, stdout })));
}

describe('bin/tokenproxy on an unsupported Node.js', () => {
  it('stops before loading the CLI, with one sentence and no stack trace', async () => {
    const { code, stderr, stdout } = await binAs('22.19.0', ['--version']);
    expect(code).toBe(1);
    expect(stderr).toContain('tokenproxy needs Node.js 22.20 or later');
    expect(stderr).toContain('this is Node.js 22.19.0');
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stdout).toBe('');
  });

  it('runs on a supported one', async () => {
    const { code, stderr, stdout } = await binAs('24.7.0', ['--version']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/\d+\.\d+\.\d+/);
  });
});
