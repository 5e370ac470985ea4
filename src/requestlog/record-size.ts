import type { AnomalyEntry } from '../store/records.js';
import type { PackedValue } from './log-protocol.js';
import type { RequestLogRecord } from './record.js';

/**
 * Estimates of what a queued record costs in memory, for the byte bounds of the log queues. Strings
 * count one byte per character (header values and paths arrive as one-byte strings); a record's
 * object, numbers and booleans count a fixed overhead. The bounds themselves leave room for
 * two-byte strings (see log-budgets.ts).
 */

/** Object header, property slots, numbers, booleans and string headers of one record. */
export const RECORD_OVERHEAD_BYTES = 300;

function text(value: string | null): number {
  return value === null ? 0 : value.length;
}

export function requestRecordBytes(r: RequestLogRecord): number {
  return (
    RECORD_OVERHEAD_BYTES +
    text(r.requestId) +
    text(r.timestamp) +
    text(r.accountId) +
    text(r.tokenId) +
    text(r.provider) +
    text(r.origin) +
    text(r.ip) +
    text(r.country) +
    text(r.pop) +
    text(r.path) +
    text(r.model)
  );
}

/** The same estimate for a record packed by packRequest, `width` values from `offset`. */
export function packedRecordBytes(packed: readonly PackedValue[], offset: number, width: number): number {
  let bytes = RECORD_OVERHEAD_BYTES;
  for (let i = offset; i < offset + width; i += 1) {
    const value = packed[i];
    if (typeof value === 'string') bytes += value.length;
  }
  return bytes;
}

export function anomalyEntryBytes(e: AnomalyEntry): number {
  return (
    RECORD_OVERHEAD_BYTES +
    e.id.length +
    e.accountId.length +
    e.tokenId.length +
    e.timestamp.length +
    text(e.origin) +
    e.ip.length +
    text(e.country) +
    e.path.length +
    e.reason.length +
    e.kind.length +
    // Details are a detector's few numbers; breaches (the entries a flood makes) have none.
    (e.details === null || e.details === undefined ? 0 : JSON.stringify(e.details).length)
  );
}
