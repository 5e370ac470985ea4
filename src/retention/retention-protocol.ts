import type { PurgeReport, RetentionPolicy } from './purge.js';

/** What a pass's thread is started with. */
export interface RetentionThreadData {
  readonly database: string | undefined;
  readonly dataDir: string;
  readonly policy: RetentionPolicy;
}

/** Asks the thread to stop at the next batch (the server is closing). */
export type ToRetentionThread = { readonly t: 'stop' };

/** A failed pass: the message for `runNow`'s caller, the name and code for the log (never the message). */
export interface PassError {
  readonly message: string;
  readonly name: string;
  readonly code?: string;
}

export type FromRetentionThread =
  | { readonly t: 'log'; readonly line: string }
  | { readonly t: 'ran'; readonly report?: PurgeReport | null; readonly error?: PassError };
