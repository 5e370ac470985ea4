import type { UnauthorizedAttempt } from '../anomalies/record.js';
import { addDistinct, type SummaryPart } from './summary-part.js';

/** Origins and IPs named in a summary alert; the counts go on past them. */
export const SUMMARY_LISTED = 10;

/**
 * The `data` of a summary `breach.detected` event (docs/events.md): the attempts on one token that
 * the alert caps held back during one minute, on every process of a cluster.
 */
export interface BreachSummaryData {
  readonly token_id: string;
  readonly summary: true;
  readonly attempts: number;
  /** Refusal reasons seen, each with its number of attempts. */
  readonly reasons: Readonly<Record<string, number>>;
  readonly origin_count: number;
  readonly origins: readonly (string | null)[];
  readonly ip_count: number;
  readonly ips: readonly string[];
  /** True when there were more distinct origins or IPs than the summary counts exactly. */
  readonly counts_capped: boolean;
  readonly first_seen: string;
  readonly last_seen: string;
}

/**
 * The attempts on one token held back by the caps since its summary opened. Bounded whatever the
 * traffic: distinct origins and IPs are kept up to SUMMARY_DISTINCT_MAX each.
 */
export class BreachSummary {
  readonly accountId: string;
  readonly tokenId: string;
  /** When the summary is sent: the end of the window that capped the alerts. */
  dueAt: number;
  #attempts = 0;
  readonly #reasons: Record<string, number> = {};
  readonly #origins = new Set<string | null>();
  readonly #ips = new Set<string>();
  #capped = false;
  #first = '';
  #last = '';

  constructor(accountId: string, tokenId: string, dueAt: number) {
    this.accountId = accountId;
    this.tokenId = tokenId;
    this.dueAt = dueAt;
  }

  /** Adds `attempts` refused requests, of which `attempt` is the latest. */
  add(attempt: UnauthorizedAttempt, attempts: number): void {
    this.#attempts += attempts;
    this.#reasons[attempt.reason] = (this.#reasons[attempt.reason] ?? 0) + attempts;
    this.#remember(this.#origins, attempt.origin);
    this.#remember(this.#ips, attempt.ip);
    if (this.#first === '') this.#first = attempt.timestamp;
    this.#last = attempt.timestamp;
  }

  get attempts(): number {
    return this.#attempts;
  }

  /** What this process pools for the token (summary-part.ts). */
  part(): SummaryPart {
    return {
      attempts: this.#attempts,
      reasons: { ...this.#reasons },
      origins: [...this.#origins],
      ips: [...this.#ips],
      capped: this.#capped,
      first: this.#first,
      last: this.#last,
    };
  }

  #remember<T>(set: Set<T>, value: T): void {
    if (!addDistinct(set, value)) this.#capped = true;
  }
}

/** The `data` of the summary event for `tokenId`, from the parts of every process merged. */
export function breachSummaryData(tokenId: string, merged: SummaryPart): BreachSummaryData {
  return {
    token_id: tokenId,
    summary: true,
    attempts: merged.attempts,
    reasons: { ...merged.reasons },
    origin_count: merged.origins.length,
    origins: merged.origins.slice(0, SUMMARY_LISTED),
    ip_count: merged.ips.length,
    ips: merged.ips.slice(0, SUMMARY_LISTED),
    counts_capped: merged.capped,
    first_seen: merged.first,
    last_seen: merged.last,
  };
}
