import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { SETTINGS, envName, flagName, type SettingSpec } from '../../src/config/settings.js';
import { BIN, runCli } from '../support/cli.js';

const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** The `--flag` names a help text lists, in order. */
function flags(help: string): string[] {
  return [...help.matchAll(/^\s+(?:-\w, )?(--[a-z0-9-]+)/gm)].map((m) => m[1] ?? '');
}

/** Help text with commander's line wrapping undone, so a description can be matched whole. */
function unwrapped(help: string): string {
  return help.replace(/\n\s+(?![-\s])/g, ' ');
}

describe('tokenproxy --help, --version', () => {
  it.each([['--version'], ['-v']])('%s prints the version', async (flag) => {
    const res = await runCli([flag]);
    expect(res.code).toBe(0);
    expect(res.stdout.trim()).toBe(pkg.version);
  });

  it('`accounts create --help` lists its own options and only the settings it reads', async () => {
    const res = await runCli(['accounts', 'create', '--help']);
    expect(res.code).toBe(0);
    expect(flags(res.stdout).sort()).toEqual(
      [
        ...['--name', '--plan', '--json', '--config', '--data-dir', '--database', '--help'],
        // It writes to the store, so it proves the KEK first, like serve.
        ...['--kek', '--pkcs11-module', '--pkcs11-token-label', '--pkcs11-pin', '--pkcs11-key-label'],
      ].sort(),
    );
    const text = unwrapped(res.stdout);
    expect(text).toMatch(
      /--plan <plan>\s+plan: free, unlimited or one of the config file's "plans" \(default: "free"\)/,
    );
    expect(text).toContain('default: ./tokenproxy-data; env TOKENPROXY_DATA_DIR');
  });

  it.each([
    [['kek', 'rotate'], ['--batch-size']],
    [
      ['kek', 'migrate'],
      ['--to', '--batch-size'],
    ],
  ])(
    "`%s --help` lists its own options and the store and KEK settings only (the rest are accepted unlisted: test/kek passes serve's flags)",
    async (command, own) => {
      const res = await runCli([...command, '--help']);
      expect(res.code).toBe(0);
      expect(flags(res.stdout).sort()).toEqual(
        [
          ...own,
          ...['--config', '--data-dir', '--database', '--help'],
          ...['--kek', '--pkcs11-module', '--pkcs11-token-label', '--pkcs11-pin', '--pkcs11-key-label'],
        ].sort(),
      );
    },
  );

  it('`migrate --help` lists the store settings only', async () => {
    const res = await runCli(['migrate', '--help']);
    expect(res.code).toBe(0);
    expect(flags(res.stdout).sort()).toEqual(['--config', '--data-dir', '--database', '--help'].sort());
  });

  it('`serve --help` lists every setting with its default and environment variable', async () => {
    const res = await runCli(['serve', '--help']);
    expect(res.code).toBe(0);
    const text = unwrapped(res.stdout);
    const specs = SETTINGS as readonly SettingSpec[];
    expect(flags(res.stdout).sort()).toEqual(
      ['--config', '--help', ...specs.map((s) => flagName(s.name))].sort(),
    );
    for (const spec of specs) {
      const line = text.split('\n').find((l) => l.trimStart().startsWith(`${flagName(spec.name)} `));
      expect(line, spec.name).toBeDefined();
      expect(line, spec.name).toContain(`env ${envName(spec.name)}`);
      if (spec.default !== undefined && spec.secret !== true) {
        expect(line, spec.name).toContain(`default: ${String(spec.default)};`);
      } else {
        expect(line, spec.name).not.toContain('default:');
      }
    }
    expect(text).toContain('default: 8443; env TOKENPROXY_API_PORT');
  });

  it('a clone that was not built says to run npm ci instead of printing a stack trace', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-unbuilt-'));
    try {
      await mkdir(path.join(dir, 'bin'));
      await copyFile(BIN, path.join(dir, 'bin', 'tokenproxy'));
      await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
      const res = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [path.join(dir, 'bin', 'tokenproxy'), '--version']);
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('close', (code) => resolve({ code, stderr }));
      });
      expect(res.code).toBe(1);
      expect(res.stderr).toContain('tokenproxy is not built: run npm ci');
      expect(res.stderr).not.toMatch(/ERR_MODULE_NOT_FOUND|\n\s+at /);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an unknown option or a flag without its value: exit 2 naming it, as for a bad setting', async () => {
    const unknown = await runCli(['serve', '--proxy-prot', '8444']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--proxy-prot'");
    const missing = await runCli(['serve', '--proxy-port']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("option '--proxy-port <value>' argument missing");
    const help = await runCli(['serve', '--help']);
    expect(help.code).toBe(0);
  });

  it('`kek rotate` with a bad --batch-size: exit 2, the refusal on stderr', async () => {
    const res = await runCli(['kek', 'rotate', '--batch-size', '0']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--batch-size must be an integer from 1 to 10000');
    expect(res.stdout).toBe('');
  });
});
