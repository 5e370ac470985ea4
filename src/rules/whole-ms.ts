/**
 * A measured duration (`performance.now()` differences carry fractions) in the whole milliseconds
 * that records, columns and log lines hold: the request log's `latency_ms` and a delivery attempt's
 * `duration_ms` are integer columns (spec §2.5). One function, so that every layer a duration
 * passes through rounds it the same way and a second rounding changes nothing.
 */
export function wholeMs(ms: number): number {
  return Math.round(ms);
}
