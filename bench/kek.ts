/**
 * `npm run bench:kek`: what the KEK adds to a proxied request. A proxied request costs one
 * `vault.decrypt` (one DEK unwrap under the KEK plus the data decryption); this measures it for the
 * local KEK and for the pkcs11 KEK (SoftHSM2 in a thread of its own), one at a time and 32 at once,
 * and the event-loop delay of the main thread while the HSM is busy (it must stay that of an idle
 * loop: the PKCS#11 calls may not block it). Needs `softhsm2-util`. Separate from bench/run.ts.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createLocalVault } from '../src/vault/local-kek.js';
import { createEnvelopeVault, type Vault } from '../src/vault/vault.js';

const SEQUENTIAL = 3000;
const CONCURRENT = 32;
const CONCURRENT_ROUNDS = 200;
const BINDING = { keyId: 'key_bench', accountId: 'acct_bench' };

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

async function measure(name: string, vault: Vault): Promise<void> {
  const envelope = await vault.encrypt(Buffer.from('sk-bench-0123456789abcdef0123456789abcdef'), BINDING);
  for (let i = 0; i < 200; i++) (await vault.decrypt(envelope, BINDING)).fill(0);
  const times: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const t0 = performance.now();
    (await vault.decrypt(envelope, BINDING)).fill(0);
    times.push((performance.now() - t0) * 1000);
  }
  times.sort((a, b) => a - b);

  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const t0 = performance.now();
  for (let round = 0; round < CONCURRENT_ROUNDS; round++) {
    await Promise.all(
      Array.from({ length: CONCURRENT }, async () => (await vault.decrypt(envelope, BINDING)).fill(0)),
    );
  }
  const seconds = (performance.now() - t0) / 1000;
  loop.disable();
  const rate = (CONCURRENT * CONCURRENT_ROUNDS) / seconds;
  console.log(
    `${name.padEnd(7)} decrypt one at a time: p50 ${quantile(times, 0.5).toFixed(1)} µs, p99 ${quantile(times, 0.99).toFixed(1)} µs, ` +
      `p99.9 ${quantile(times, 0.999).toFixed(1)} µs | ${CONCURRENT} at once: ${Math.round(rate)} decrypts/s | ` +
      `event-loop delay meanwhile: p99 ${(loop.percentile(99) / 1e6).toFixed(2)} ms, max ${(loop.max / 1e6).toFixed(2)} ms`,
  );
}

/** The event-loop delay of an idle loop on this machine right now: the baseline for the figures above. */
async function idleLoopDelay(ms: number): Promise<void> {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  await new Promise((resolve) => setTimeout(resolve, ms));
  loop.disable();
  console.log(
    `idle    event-loop delay over ${ms} ms: p99 ${(loop.percentile(99) / 1e6).toFixed(2)} ms, max ${(loop.max / 1e6).toFixed(2)} ms`,
  );
}

async function main(): Promise<void> {
  console.log(
    `node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]?.toFixed(1) ?? '?'}`,
  );
  await idleLoopDelay(3000);
  await measure('local', createLocalVault(Buffer.alloc(32, 7)));

  const root = mkdtempSync(path.join(os.tmpdir(), 'tokenproxy-bench-hsm-'));
  try {
    const conf = path.join(root, 'softhsm2.conf');
    const tokens = path.join(root, 'tokens');
    execFileSync('mkdir', ['-p', tokens]);
    writeFileSync(conf, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\n`);
    process.env.SOFTHSM2_CONF = conf;
    execFileSync(
      'softhsm2-util',
      ['--init-token', '--free', '--label', 'bench', '--pin', '1234', '--so-pin', '5678'],
      {
        stdio: 'ignore',
      },
    );
    // From dist/ (built by `npm run bench:kek`): the HSM thread is a file of its own, found beside it.
    const { openPkcs11Kek } = (await import(
      new URL('../../dist/vault/pkcs11-kek.js', import.meta.url).href
    )) as typeof import('../src/vault/pkcs11-kek.js');
    const kek = await openPkcs11Kek({
      module: '/usr/lib/softhsm/libsofthsm2.so',
      tokenLabel: 'bench',
      pin: '1234',
      keyLabel: 'tokenproxy-kek',
      create: true,
    });
    const vault = createEnvelopeVault(kek);
    try {
      await measure('pkcs11', vault);
    } finally {
      await vault.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
