import type { SelfSignedMaterial } from './self-signed.js';

/** What the certificate thread answers, once. */
export type FromSelfSignedThread =
  | { readonly t: 'pair'; readonly pair: SelfSignedMaterial }
  | { readonly t: 'error'; readonly message: string };
