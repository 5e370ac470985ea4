import { parseTrustProxy } from '../../src/rules/ip-match.js';
import { timestampPosition, type AnomalyEntry, type PageAfter } from '../../src/store/records.js';
import type { Store } from '../../src/store/store.js';
import type { ProxyHarness } from '../proxy/harness.js';

/** Trust loopback, so tests choose the client IP with X-Forwarded-For. */
export const TRUST_LOOPBACK = (parseTrustProxy('loopback') as { ok: true; value: string[] }).value;

export const EVIL_ORIGIN = 'https://evil.example.net';

/** Every stored anomaly of the account (after the writer's queue is flushed). */
export async function storedAnomalies(
  h: ProxyHarness,
  store: Store,
  tokenId?: string,
): Promise<AnomalyEntry[]> {
  await h.anomalyLog?.flush();
  const out: AnomalyEntry[] = [];
  let after: PageAfter | undefined;
  for (;;) {
    const page = await store.anomalies.list(h.accountId, { tokenId }, { limit: 100, after });
    out.push(...page.items);
    if (!page.hasMore) return out;
    after = timestampPosition(page.items[page.items.length - 1] as AnomalyEntry);
  }
}

/** Runs `total` tasks with at most `width` in flight. */
export async function pool<T>(total: number, width: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(total);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < total) {
      const i = next++;
      results[i] = await task(i);
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, total) }, worker));
  return results;
}

export function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) {
    const k = key(item);
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}
