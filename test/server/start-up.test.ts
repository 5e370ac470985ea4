import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type RunResult } from '../support/cli.js';
import { accountsIn } from '../support/files.js';

/**
 * DESIGN §13: validate → open the store and check the KEK → bind both ports → only then create the
 * first account and print its key. A start that fails names the setting and exits 2, and leaves no
 * account (and no printed key) behind.
 */

const API_KEY_RE = /svc_sk_[1-9A-HJ-NP-Za-km-z]{43}/;

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-start-up-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function dataDir(name: string): string {
  return path.join(root, name);
}

function listenOnFreePort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address ? address.port : 0 });
    });
  });
}

function expectRefused(result: RunResult, setting: string): void {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toContain(`setting ${setting}`);
  expect(result.stderr).not.toMatch(API_KEY_RE);
  expect(result.stderr).not.toContain('Created account');
  expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
}

// Each test starts whole server processes: on a loaded 2-core machine that alone can take many seconds.
describe('a start that fails leaves nothing behind and names the setting', { timeout: 120_000 }, () => {
  for (const which of ['proxy', 'api'] as const) {
    it(`a busy ${which} port: exit 2 naming ${which}_port, no account created, no key printed`, async () => {
      const { server, port } = await listenOnFreePort();
      try {
        const dir = dataDir(`busy-${which}`);
        const other = which === 'proxy' ? '--api-port' : '--proxy-port';
        const result = await runCli([
          'serve',
          '--data-dir',
          dir,
          `--${which}-port`,
          String(port),
          other,
          '0',
        ]);
        expectRefused(result, `${which}_port`);
        expect(result.stderr).toContain(`port ${port}`);
        // The ports are tried before anything is written: no store, master key or certificate.
        expect(existsSync(dir)).toBe(false);
      } finally {
        server.close();
      }
    });
  }

  it('an unresolvable host: exit 2 naming host, before anything is written', async () => {
    const dir = dataDir('bad-host');
    const result = await runCli(['serve', '--data-dir', dir, '--host', '999.1.1.1']);
    expectRefused(result, 'host');
    expect(existsSync(dir)).toBe(false);
  });

  it('a host that is not an address of this machine: exit 2 naming host, no account', async () => {
    const dir = dataDir('foreign-host');
    // TEST-NET-1 (RFC 5737): never assigned to a machine, so binding fails with EADDRNOTAVAIL.
    const result = await runCli([
      'serve',
      '--data-dir',
      dir,
      '--host',
      '192.0.2.1',
      '--api-port',
      '0',
      '--proxy-port',
      '0',
    ]);
    expectRefused(result, 'host');
    expect(existsSync(dir)).toBe(false);
  });

  it('a provider_ca that does not exist: exit 2 naming provider_ca', async () => {
    const result = await runCli(['serve', '--data-dir', dataDir('ca-missing'), '--provider-ca', '/nope.pem']);
    expectRefused(result, 'provider_ca');
    expect(result.stderr).toContain('/nope.pem');
  });

  it('a provider_ca that is not PEM: exit 2 naming provider_ca (it was accepted silently)', async () => {
    const file = path.join(root, 'not-a-ca.pem');
    await writeFile(file, 'this is not a certificate\n');
    const result = await runCli(['serve', '--data-dir', dataDir('ca-not-pem'), '--provider-ca', file]);
    expectRefused(result, 'provider_ca');
    expect(result.stderr).toContain('no PEM certificate');
  });

  it('a data_dir below a regular file: exit 2 naming data_dir', async () => {
    const file = path.join(root, 'a-file');
    await writeFile(file, '');
    const result = await runCli(['serve', '--data-dir', path.join(file, 'data')]);
    expectRefused(result, 'data_dir');
  });

  it('a data_dir this user may not write: exit 2 naming data_dir', async () => {
    // Root writes through any mode bits; sysfs refuses new directories even to root.
    let dir = '/sys/tokenproxy-start-up-test/data';
    if (process.getuid?.() !== 0) {
      const parent = path.join(root, 'read-only');
      await mkdir(parent);
      await chmod(parent, 0o555);
      dir = path.join(parent, 'data');
    }
    const result = await runCli(['serve', '--data-dir', dir]);
    expectRefused(result, 'data_dir');
    expect(result.stderr).toContain('permission denied');
  });
});

describe('one serve per SQLite data dir', { timeout: 120_000 }, () => {
  it('a KEK the store refuses: no certificate is generated, and the refusal writes nothing', async () => {
    const dir = dataDir('wrong-kek');
    const right = { TOKENPROXY_MASTER_KEY: Buffer.alloc(32, 1).toString('base64') };
    const server = await startServe(['--data-dir', dir], right);
    expect(await server.stop()).toBe(0);
    // As on a new machine's data dir beside an existing store: no certificate yet.
    await rm(path.join(dir, 'tls'), { recursive: true, force: true });
    const wrong = { TOKENPROXY_MASTER_KEY: Buffer.alloc(32, 2).toString('base64') };
    const result = await runCli(['serve', '--data-dir', dir, '--api-port', '0', '--proxy-port', '0'], wrong);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('KEK mismatch');
    expect(existsSync(path.join(dir, 'tls'))).toBe(false);
  });

  it('a KEK refused after the schema was upgraded says the upgrade happened (not "nothing was written" alone)', async () => {
    const dir = dataDir('wrong-kek-older');
    const right = { TOKENPROXY_MASTER_KEY: Buffer.alloc(32, 3).toString('base64') };
    expect(await (await startServe(['--data-dir', dir], right)).stop()).toBe(0);
    // The store as the previous release left it: its last migration undone (by hand, there are no
    // down-migrations: when a migration is added after 0015, undo that one here instead).
    const db = new Database(path.join(dir, 'tokenproxy.db'));
    db.exec(
      "ALTER TABLE dashboard_sessions DROP COLUMN api_key_id; DELETE FROM kysely_migration WHERE name = '0015_session_api_key'",
    );
    db.close();
    const wrong = { TOKENPROXY_MASTER_KEY: Buffer.alloc(32, 4).toString('base64') };
    const result = await runCli(['serve', '--data-dir', dir, '--api-port', '0', '--proxy-port', '0'], wrong);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('KEK mismatch');
    expect(result.stderr).toContain(
      "this start upgraded the store's schema with 1 migration(s), 0015_session_api_key the last: a tokenproxy older than this one no longer opens it",
    );
    // On an up-to-date store the same refusal says nothing of an upgrade.
    const again = await runCli(['serve', '--data-dir', dir, '--api-port', '0', '--proxy-port', '0'], wrong);
    expect(again.code).toBe(2);
    expect(again.stderr).not.toContain('upgraded');
  });

  it('a start that fails on a data dir it made leaves no empty directory behind', async () => {
    const dir = dataDir('made-then-failed');
    const result = await runCli([
      'serve',
      '--data-dir',
      dir,
      '--tls-cert',
      path.join(root, 'no-such-cert.pem'),
      '--tls-key',
      path.join(root, 'no-such-key.pem'),
      '--api-port',
      '0',
      '--proxy-port',
      '0',
    ]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('tls_cert: cannot read');
    expect(existsSync(dir)).toBe(false);
  });

  it.each([
    [
      'a geoip_db that does not open',
      (): string[] => ['--geoip-db', path.join(root, 'no-such.mmdb')],
      {},
      'geoip_db',
    ],
    [
      '--workers 2 and a geoip_db that does not open',
      (): string[] => [
        '--workers',
        '2',
        '--redis',
        'redis://127.0.0.1:1',
        '--geoip-db',
        path.join(root, 'no.mmdb'),
      ],
      {},
      'geoip_db',
    ],
    [
      'a TOKENPROXY_MASTER_KEY that is not a key',
      (): string[] => [],
      { TOKENPROXY_MASTER_KEY: 'not-a-key' },
      'TOKENPROXY_MASTER_KEY',
    ],
  ])('%s: exit 2 before the store is made, nothing left behind', async (_name, args, env, setting) => {
    const dir = dataDir(`early-${setting}`);
    const result = await runCli(
      ['serve', '--data-dir', dir, '--api-port', '0', '--proxy-port', '0', ...args()],
      env,
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(setting);
    expect(existsSync(dir)).toBe(false);
  });

  it('`accounts list` on a data dir with no store says so, and creates none', async () => {
    const dir = dataDir('mistyped');
    const result = await runCli(['accounts', 'list', '--data-dir', dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`no tokenproxy store in ${dir}`);
    expect(existsSync(dir)).toBe(false);
  });

  it('a second serve on the same data dir refuses, naming the first; after a kill -9 the lock is taken over', async () => {
    const dir = dataDir('locked');
    const first = await startServe(['--data-dir', dir]);
    try {
      const second = await runCli(['serve', '--data-dir', dir, '--api-port', '0', '--proxy-port', '0']);
      expectRefused(second, 'data_dir');
      expect(second.stderr).toContain(`pid ${String(first.child.pid)}`);
      // With the first's own ports (the usual second start), the busy port is not what is named.
      const samePorts = await runCli([
        'serve',
        '--data-dir',
        dir,
        '--api-port',
        new URL(first.apiUrl).port,
        '--proxy-port',
        new URL(first.proxyUrl).port,
      ]);
      expectRefused(samePorts, 'data_dir');
      expect(samePorts.stderr).toContain(`pid ${String(first.child.pid)}`);
      expect(samePorts.stderr).not.toContain('already in use');
      expect(accountsIn(dir)).toBe(1);
    } finally {
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));
    }
    // The killed server left its lock file; its process is gone, so the next start takes it over.
    expect(existsSync(path.join(dir, 'serve.lock'))).toBe(true);
    const third = await startServe(['--data-dir', dir]);
    expect(await third.stop()).toBe(0);
    expect(existsSync(path.join(dir, 'serve.lock'))).toBe(false);
  });
});

describe('data files are private whatever the umask', { timeout: 120_000 }, () => {
  it('creates tokenproxy.db, -wal and -shm 0600 and the data dir 0700 in a pre-existing 0755 dir', async () => {
    const dir = dataDir('umask');
    await mkdir(dir, { mode: 0o755 });
    await chmod(dir, 0o755);
    const server = await startServe(['--data-dir', dir]);
    try {
      for (const name of [
        'tokenproxy.db',
        'tokenproxy.db-wal',
        'tokenproxy.db-shm',
        'master.key',
        'serve.lock',
      ]) {
        expect(((await stat(path.join(dir, name))).mode & 0o777).toString(8), name).toBe('600');
      }
      expect(((await stat(dir)).mode & 0o777).toString(8)).toBe('700');
      expect(server.stdout()).toContain('tightened the permissions');
    } finally {
      await server.stop();
    }
  });

  it('tightens a store file an older version left readable, and says so', async () => {
    const dir = dataDir('loose-db');
    const first = await startServe(['--data-dir', dir]);
    await first.stop();
    const db = path.join(dir, 'tokenproxy.db');
    await chmod(db, 0o644);
    const second = await startServe(['--data-dir', dir]);
    try {
      expect(((await stat(db)).mode & 0o777).toString(8)).toBe('600');
      const line = second
        .stdout()
        .split('\n')
        .find((l) => l.includes('tightened the permissions') && l.includes('tokenproxy.db'));
      expect(line).toBeDefined();
      expect(JSON.parse(line ?? '{}')).toMatchObject({ from: '0644', to: '0600' });
    } finally {
      await second.stop();
    }
  });
});
