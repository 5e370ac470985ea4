import { Worker } from 'node:worker_threads';
import { compiledThread } from '../runtime/compiled-thread.js';
import type { SelfSignedMaterial } from './self-signed.js';
import type { FromSelfSignedThread } from './self-signed-protocol.js';

/**
 * The self-signed pair, made on a short-lived thread (self-signed-thread.ts) so the serving process
 * does not keep the X.509 library loaded for its whole life after its first start. The thread adds
 * ~0.1 s to that one start (its isolate, and the library loaded there); kept, the library is ~7 MB.
 */
export function generateSelfSignedOnThread(): Promise<SelfSignedMaterial> {
  const file = compiledThread(import.meta.url, 'tls/self-signed-thread.js', 'tls');
  return new Promise((resolve, reject) => {
    const worker = new Worker(file);
    let answer: FromSelfSignedThread | undefined;
    worker.once('message', (message: FromSelfSignedThread) => {
      answer = message;
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (answer?.t === 'pair') resolve(answer.pair);
      else if (answer?.t === 'error')
        reject(new Error(`generating the certificate failed: ${answer.message}`));
      else reject(new Error(`the certificate thread ended (exit code ${code}) without a certificate`));
    });
  });
}
