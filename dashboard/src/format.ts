/** Display helpers. Everything returns plain strings: Preact renders them as text, never as HTML. */

export function when(iso: string | null): string {
  if (iso === null) return '—';
  const d = new Date(iso);
  const seconds = Math.round((Date.now() - d.getTime()) / 1000);
  if (seconds >= 0 && seconds < 60) return 'just now';
  if (seconds >= 0 && seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds >= 0 && seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return dateTime(iso);
}

export function dateTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });
}

export function count(n: number): string {
  return n.toLocaleString('en-US');
}

export const REASON_LABELS: Record<string, string> = {
  origin_or_ip_not_allowed: 'Origin or IP not allowed',
  ip_backoff: 'IP in backoff',
  rate_or_quota_limit: 'Rate limit or quota',
  budget_exceeded: 'Budget exceeded',
  token_revoked_or_expired: 'Revoked or expired token',
  provider_mismatch: 'Wrong provider',
  upstream_error: 'Provider unreachable',
  other: 'Other',
  origin_not_allowed: 'Origin not allowed',
  ip_not_allowed: 'IP not allowed',
};

export function reasonLabel(reason: string): string {
  return REASON_LABELS[reason] ?? reason;
}

export function lines(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** "$3.20 / $20.00 this month" or "120,000 / 2,000,000 tokens today". */
export function budgetUse(b: {
  used: number;
  limit: number;
  unit: 'usd' | 'tokens';
  budget: { period: string };
}): string {
  const amount = (n: number) => (b.unit === 'usd' ? `$${n.toFixed(2)}` : count(n));
  const period =
    b.budget.period === 'day' ? 'today' : b.budget.period === 'month' ? 'this month' : 'in total';
  return `${amount(b.used)} / ${amount(b.limit)}${b.unit === 'tokens' ? ' tokens' : ''} ${period}`;
}
