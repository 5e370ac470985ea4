import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { accountsIn } from '../support/files.js';

/**
 * A build that lost one of its worker threads' files (a partial copy, a hand-pruned image) must stop
 * the start, saying which file and how to fix it, and leave nothing behind: not a server that runs
 * until the thread is first needed. Each case runs `serve` from a copy of the built tree with one
 * thread file removed.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const API_KEY_RE = /svc_sk_[1-9A-HJ-NP-Za-km-z]{43}/;

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-broken-install-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function installWithout(name: string, file: string): Promise<string> {
  const tree = path.join(root, name);
  await cp(path.join(ROOT, 'bin'), path.join(tree, 'bin'), { recursive: true });
  await cp(path.join(ROOT, 'dist'), path.join(tree, 'dist'), { recursive: true });
  await cp(path.join(ROOT, 'prices'), path.join(tree, 'prices'), { recursive: true });
  await cp(path.join(ROOT, 'package.json'), path.join(tree, 'package.json'));
  await symlink(path.join(ROOT, 'node_modules'), path.join(tree, 'node_modules'), 'dir');
  await rm(path.join(tree, 'dist', file));
  return tree;
}

describe('a broken install stops the start', { timeout: 120_000 }, () => {
  it.each([
    ['log worker', 'requestlog/log-thread.js'],
    ['retention', 'retention/retention-thread.js'],
  ])(
    'without the %s thread (dist/%s): names the file and `npm run build`, no account, no key',
    async (_, file) => {
      const tree = await installWithout(path.basename(file, '.js'), file);
      const dataDir = path.join(root, `data-${path.basename(file, '.js')}`);
      const { code, stderr } = await runCli(
        ['serve', '--data-dir', dataDir, '--api-port', '0', '--proxy-port', '0'],
        {},
        60_000,
        path.join(tree, 'bin/tokenproxy'),
      );
      expect(code, stderr).not.toBe(0);
      expect(stderr).toContain(`dist/${file} is missing; run \`npm run build\``);
      expect(stderr).not.toMatch(API_KEY_RE);
      expect(stderr).not.toContain('Created account');
      expect(stderr).not.toContain('Ready.');
      expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(accountsIn(dataDir)).toBe(0);
      // The lock was released: the data dir is free for a fixed install.
      expect(existsSync(path.join(dataDir, 'serve.lock'))).toBe(false);
    },
  );
});

describe('a build older than bin/tokenproxy', { timeout: 60_000 }, () => {
  it('without dist/cli/node-support.js (a pull without a rebuild): says to build, no stack trace', async () => {
    const tree = await installWithout('node-support', 'cli/node-support.js');
    const { code, stderr, stdout } = await runCli(
      ['--version'],
      {},
      30_000,
      path.join(tree, 'bin/tokenproxy'),
    );
    expect(code).toBe(1);
    expect(stderr).toContain('run npm ci (or npm run build)');
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stdout).toBe('');
  });
});
