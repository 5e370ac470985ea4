/**
 * Generates the self-signed pair on a thread of its own, started by generate-on-thread.ts and ended
 * with its answer. The X.509 library and its dependency graph (~7 MB of RSS in the serving process,
 * issue 17 round twenty) then go with the thread's isolate instead of staying loaded in a server
 * that needed them once, at its first start. Never imported.
 */
import { parentPort } from 'node:worker_threads';
import { generateSelfSigned } from './self-signed.js';
import type { FromSelfSignedThread } from './self-signed-protocol.js';

const port = parentPort;
if (port === null) throw new Error('self-signed-thread.js runs as a worker thread only');
generateSelfSigned().then(
  (pair) => port.postMessage({ t: 'pair', pair } satisfies FromSelfSignedThread),
  (err: unknown) =>
    port.postMessage({
      t: 'error',
      message: err instanceof Error ? err.message : String(err),
    } satisfies FromSelfSignedThread),
);
