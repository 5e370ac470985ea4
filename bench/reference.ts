/**
 * What the bench's two reference servers (forwarder.ts, relay.ts) share: the same command line,
 * `tokenproxy serve`'s V8 flags, young-generation size and helper pool so that only the code
 * differs from tokenproxy, one TLS context for every upstream connection (as src/proxy/upstream.ts
 * builds it), and the `{"port":N}` line the driver waits for.
 *
 * Usage of either: node <script> <cert.pem> <key.pem> <upstream CA.pem> <upstream port>.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo, Server } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { applyServeV8Flags, restartWithServeFlags } from '../src/runtime/v8-tuning.js';

export interface ReferenceSetup {
  /** The listener's certificate and key (PEM). */
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Public roots plus the stand-in's CA. */
  readonly upstreamContext: SecureContext;
  readonly upstreamPort: number;
}

/** Restarts with serve's start-time flags, applies the V8 flags and reads the command line; exits with a usage line when it is incomplete. */
export function referenceSetup(script: string): ReferenceSetup {
  restartWithServeFlags();
  applyServeV8Flags();
  // An orderly exit on the driver's SIGTERM, so that a `--cpu-prof` profile gets written.
  process.once('SIGTERM', () => process.exit(0));
  const [certFile, keyFile, caFile, upstreamPort] = process.argv.slice(2);
  if (certFile === undefined || keyFile === undefined || caFile === undefined || upstreamPort === undefined) {
    process.stderr.write(`usage: ${script} <cert.pem> <key.pem> <upstream-ca.pem> <upstream-port>\n`);
    process.exit(2);
  }
  return {
    cert: readFileSync(certFile),
    key: readFileSync(keyFile),
    upstreamContext: createSecureContext({ ca: [...rootCertificates, readFileSync(caFile, 'utf8')] }),
    upstreamPort: Number(upstreamPort),
  };
}

/** Listens on a free loopback port and prints `{"port":N}`, which the driver waits for. */
export function listenAndAnnounce(server: Server): void {
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
  });
}
