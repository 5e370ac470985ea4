import type { UsageModelRollup, UsageRollup } from '../store/rollup-records.js';
import type { RequestLogRecord } from './record.js';

/** The outcome a forwarded request is counted under. */
export const FORWARDED = 'forwarded';

/**
 * Why the proxy refused a request of a known token, from what the record keeps: its status, whether
 * the origin/IP check passed, and the proxy's error code. The names are the Overview's labels and the
 * keys of GET /v1/usage's `refused_by_reason`; a new one is only ever added (clients read the keys).
 */
export type RefusalReason =
  | 'origin_or_ip_not_allowed'
  | 'ip_backoff'
  | 'rate_or_quota_limit'
  | 'budget_exceeded'
  | 'token_revoked_or_expired'
  | 'provider_mismatch'
  | 'upstream_error'
  | 'other';

export const REFUSAL_REASONS: readonly RefusalReason[] = [
  'origin_or_ip_not_allowed',
  'ip_backoff',
  'rate_or_quota_limit',
  'budget_exceeded',
  'token_revoked_or_expired',
  'provider_mismatch',
  'upstream_error',
  'other',
];

export function refusalReason(status: number, authorized: boolean, errorCode: string | null): RefusalReason {
  // A spend limit is the owner's own setting, not traffic pressure: apart from rate limits and quotas.
  if (errorCode === 'budget_exceeded') return 'budget_exceeded';
  if (status === 403) return 'origin_or_ip_not_allowed';
  if (status === 429) return authorized ? 'rate_or_quota_limit' : 'ip_backoff';
  if (status === 401) return 'token_revoked_or_expired';
  if (status === 400) return 'provider_mismatch';
  if (status === 502 || status === 504) return 'upstream_error';
  return 'other';
}

/** Start of the UTC hour of an ISO timestamp, as ISO text (string slicing: no Date per record). */
export function hourOf(timestamp: string): string {
  return `${timestamp.slice(0, 13)}:00:00.000Z`;
}

/**
 * A batch's records counted per account, hour and outcome. Records of no known account (an unknown
 * token) belong to nobody's Overview and are left out.
 */
export function rollupsOf(batch: readonly RequestLogRecord[]): UsageRollup[] {
  const counts = new Map<string, { accountId: string; hour: string; outcome: string; requests: number }>();
  for (const record of batch) {
    const { accountId } = record;
    if (accountId === null) continue;
    const hour = hourOf(record.timestamp);
    const outcome = record.forwarded
      ? FORWARDED
      : refusalReason(record.status, record.authorized, record.errorCode);
    const key = `${accountId} ${hour} ${outcome}`;
    const entry = counts.get(key);
    if (entry === undefined) counts.set(key, { accountId, hour, outcome, requests: 1 });
    else entry.requests += 1;
  }
  return [...counts.values()];
}

/**
 * A batch's forwarded requests of known tokens counted per account, hour, token and model, with their
 * tokens and cost (unknown counts add 0; an unknown model is `''`).
 */
export function modelRollupsOf(batch: readonly RequestLogRecord[]): UsageModelRollup[] {
  const sums = new Map<string, { -readonly [K in keyof UsageModelRollup]: UsageModelRollup[K] }>();
  for (const record of batch) {
    const { accountId, tokenId } = record;
    if (accountId === null || tokenId === null || !record.forwarded) continue;
    const hour = hourOf(record.timestamp);
    const model = record.model ?? '';
    const key = `${accountId} ${hour} ${tokenId} ${model}`;
    let entry = sums.get(key);
    if (entry === undefined) {
      entry = {
        accountId,
        hour,
        tokenId,
        model,
        requests: 0,
        inputTokens: 0,
        outputTokens: 0,
        costMicros: 0,
      };
      sums.set(key, entry);
    }
    entry.requests += 1;
    entry.inputTokens += record.inputTokens ?? 0;
    entry.outputTokens += record.outputTokens ?? 0;
    entry.costMicros += record.costMicros ?? 0;
  }
  return [...sums.values()];
}
