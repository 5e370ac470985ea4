import type { UsageRollup } from '../store/rollup-records.js';
import { FORWARDED, REFUSAL_REASONS, type RefusalReason } from '../requestlog/rollups.js';

const HOUR_MS = 60 * 60 * 1000;

export interface UsageWindow {
  /** First hour counted (inclusive) and the end (exclusive), ISO. */
  readonly start: string;
  readonly end: string;
  readonly bucketMs: number;
}

/**
 * The window GET /v1/usage covers: whole hours, ending with the current (partial) hour, so "the last
 * 24 h" is the 24 hour buckets up to and including now. Day buckets count 24 hours back from there.
 */
export function usageWindow(now: Date, windowHours: number, bucketHours: number): UsageWindow {
  const endMs = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS + HOUR_MS;
  return {
    start: new Date(endMs - windowHours * HOUR_MS).toISOString(),
    end: new Date(endMs).toISOString(),
    bucketMs: bucketHours * HOUR_MS,
  };
}

export interface UsageSummary {
  forwarded: number;
  refused: number;
  refusedByReason: Record<RefusalReason, number>;
  buckets: { start: string; forwarded: number; refused: number }[];
}

/** Sums rollup rows into the window's buckets (every bucket present, oldest first) and totals. */
export function summarizeUsage(window: UsageWindow, rows: readonly UsageRollup[]): UsageSummary {
  const startMs = Date.parse(window.start);
  const count = Math.round((Date.parse(window.end) - startMs) / window.bucketMs);
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: new Date(startMs + i * window.bucketMs).toISOString(),
    forwarded: 0,
    refused: 0,
  }));
  const refusedByReason = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])) as Record<
    RefusalReason,
    number
  >;
  let forwarded = 0;
  let refused = 0;
  for (const row of rows) {
    const bucket = buckets[Math.floor((Date.parse(row.hour) - startMs) / window.bucketMs)];
    if (bucket === undefined) continue;
    if (row.outcome === FORWARDED) {
      bucket.forwarded += row.requests;
      forwarded += row.requests;
      continue;
    }
    bucket.refused += row.requests;
    refused += row.requests;
    const reason = (REFUSAL_REASONS as readonly string[]).includes(row.outcome)
      ? (row.outcome as RefusalReason)
      : 'other';
    refusedByReason[reason] += row.requests;
  }
  return { forwarded, refused, refusedByReason, buckets };
}
