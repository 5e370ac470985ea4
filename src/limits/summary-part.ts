/**
 * What one process holds of a token's breach summary, in the form the counters pool it: in a cluster
 * every member that held attempts back during the minute pools its part under the token's key, and
 * one member takes the merged whole and sends it (docs/limits.md, "Summaries in a cluster").
 */
export interface SummaryPart {
  readonly attempts: number;
  /** Refusal reasons, each with its number of attempts. */
  readonly reasons: Readonly<Record<string, number>>;
  /** Distinct origins (`null`: the request had none), at most SUMMARY_DISTINCT_MAX. */
  readonly origins: readonly (string | null)[];
  /** Distinct client networks, at most SUMMARY_DISTINCT_MAX. */
  readonly ips: readonly string[];
  /** More distinct origins or IPs were seen than the part holds. */
  readonly capped: boolean;
  /** ISO timestamps of the first and latest attempt. */
  readonly first: string;
  readonly last: string;
}

/** Distinct origins and IPs counted exactly per summary; beyond it the count says "at least". */
export const SUMMARY_DISTINCT_MAX = 1000;

/**
 * `into` with `part` added: counts summed, origins and IPs united up to SUMMARY_DISTINCT_MAX (the
 * first ones kept, in the order they came), the earliest first and the latest last. The Redis
 * script POOL_SUMMARY (redis-scripts.ts) applies the same rule; the counters suite holds them equal.
 */
export function mergeSummaryParts(into: SummaryPart | undefined, part: SummaryPart): SummaryPart {
  if (into === undefined) return part;
  const reasons: Record<string, number> = { ...into.reasons };
  for (const [reason, n] of Object.entries(part.reasons)) reasons[reason] = (reasons[reason] ?? 0) + n;
  const origins = unite(into.origins, part.origins);
  const ips = unite(into.ips, part.ips);
  return {
    attempts: into.attempts + part.attempts,
    reasons,
    origins: origins.values,
    ips: ips.values,
    capped: into.capped || part.capped || origins.capped || ips.capped,
    first: part.first < into.first ? part.first : into.first,
    last: part.last > into.last ? part.last : into.last,
  };
}

function unite<T>(held: readonly T[], added: readonly T[]): { values: T[]; capped: boolean } {
  const values = new Set(held);
  let capped = false;
  for (const value of added) if (!addDistinct(values, value)) capped = true;
  return { values: [...values], capped };
}

/**
 * Adds `value` to a summary's distinct origins or IPs unless SUMMARY_DISTINCT_MAX are held already;
 * false when it was left out (the count is then a lower bound).
 */
export function addDistinct<T>(values: Set<T>, value: T): boolean {
  if (values.has(value)) return true;
  if (values.size >= SUMMARY_DISTINCT_MAX) return false;
  values.add(value);
  return true;
}
