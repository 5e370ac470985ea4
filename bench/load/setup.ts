/** One-time set-up of a bench run: the load generator and the TLS material. */
import { BenchFailure } from '../h2load.js';
import { Children } from '../procs.js';
import { log } from '../util.js';
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The h2load version line; installs Debian's nghttp2-client first when h2load is missing. */
export async function ensureH2load(children: Children): Promise<string> {
  const version = (): string | undefined => {
    try {
      return execFileSync('h2load', ['--version'], { encoding: 'utf8' }).trim();
    } catch {
      return undefined;
    }
  };
  let v = version();
  if (v !== undefined) return v;
  log('h2load missing: installing nghttp2-client with apt-get');
  const apt = await children.run(
    'apt-get',
    'sh',
    ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client'],
    300_000,
  );
  v = version();
  if (v === undefined) {
    throw new BenchFailure(
      `h2load (Debian package nghttp2-client) is not installed and could not be installed:\n${apt.stderr.slice(-1500)}`,
    );
  }
  return v;
}

/** A CA and a leaf for 127.0.0.1/localhost under `tmp`, for the stand-in provider and the references. */
export async function makeCertificates(tmp: string): Promise<{ ca: string; cert: string; key: string }> {
  const d = join(tmp, 'provider-tls');
  await mkdir(d);
  const ssl = (args: string[]): void => {
    execFileSync('openssl', args, { stdio: 'ignore' });
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl(
    ['req', '-x509', ...ec, '-keyout', join(d, 'ca.key'), '-out', join(d, 'ca.pem'), '-days', '2']
      .concat(['-subj', '/CN=tokenproxy bench CA', '-addext', 'basicConstraints=critical,CA:TRUE'])
      .concat(['-addext', 'keyUsage=critical,keyCertSign']),
  );
  ssl(['req', ...ec, '-keyout', join(d, 'leaf.key'), '-out', join(d, 'leaf.csr'), '-subj', '/CN=127.0.0.1']);
  await writeFile(
    join(d, 'ext.cnf'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n',
  );
  ssl(
    [
      'x509',
      '-req',
      '-in',
      join(d, 'leaf.csr'),
      '-CA',
      join(d, 'ca.pem'),
      '-CAkey',
      join(d, 'ca.key'),
    ].concat(['-CAcreateserial', '-out', join(d, 'leaf.pem'), '-days', '2', '-extfile', join(d, 'ext.cnf')]),
  );
  return { ca: join(d, 'ca.pem'), cert: join(d, 'leaf.pem'), key: join(d, 'leaf.key') };
}

/**
 * Moves every thread of `pid` to `cpu`. `taskset -a` failed once at the bench's start on Node 26
 * (its message was not kept, and 14 more starts did not fail). The likely cause: it lists the
 * threads, then moves them one by one, and a thread that ends in between fails the whole call. The
 * next try moves the threads still there; after five, the bench stops with taskset's own message.
 */
export function pinAllThreads(pid: number, cpu: number): void {
  for (let attempt = 1; ; attempt++) {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'pipe' });
      return;
    } catch (err) {
      if (attempt === 5) {
        const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim() ?? '';
        throw new BenchFailure(`could not pin process ${pid} to CPU ${cpu} with taskset: ${stderr}`);
      }
    }
  }
}
