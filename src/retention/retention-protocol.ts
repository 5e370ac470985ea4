import type { PurgeReport, RetentionPolicy } from './purge.js';

export interface RetentionThreadData {
  readonly database: string | undefined;
  readonly dataDir: string;
  readonly policy: RetentionPolicy;
  readonly intervalMs?: number | undefined;
  readonly firstDelayMs?: number | undefined;
}

export type ToRetentionThread = { readonly t: 'run'; readonly id: number } | { readonly t: 'close' };

export type FromRetentionThread =
  | { readonly t: 'log'; readonly line: string }
  | { readonly t: 'ran'; readonly id: number; readonly report?: PurgeReport | null; readonly error?: string }
  | { readonly t: 'closed' };
